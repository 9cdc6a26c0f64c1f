import Foundation
import SupportHTTP
import SupportUtilities

/// The one way the REST API writes JSON: `JSONEncoder` (sorted keys, `/` unescaped), then SPEC §4.2's rule for JSON
/// output (``TerminalText/escapedJSON(_:)``: DEL, the C1 controls, the bidi controls, U+2028 and U+2029 as `\uhhhh`;
/// JSON escapes the C0 controls itself). The bytes decode to the same strings, and a body shown raw — in a terminal,
/// a log, a browser's network panel — can neither reorder nor recolour what a person reads (issue 20, finding 12).
///
/// Every answer body, error bodies and event-stream `data:` lines included, goes through ``encode(_:)``.
enum RESTJSON {
    /// `value` as escaped JSON bytes; nil when it cannot be encoded.
    static func encode(_ value: some Encodable) -> [UInt8]? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return nil }
        return Array(TerminalText.escapedJSON(String(decoding: data, as: UTF8.self)).utf8)
    }
}

extension HTTPResponse {
    /// A JSON answer of the REST API (``RESTJSON/encode(_:)``); a 500 with the error body when encoding fails.
    static func api(_ status: HTTPStatus, encoding value: some Encodable, headers: HTTPHeaders = HTTPHeaders())
        -> HTTPResponse
    {
        guard let body = RESTJSON.encode(value) else {
            return .error(.internalServerError, message: "the server could not encode its response as JSON")
        }
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}
