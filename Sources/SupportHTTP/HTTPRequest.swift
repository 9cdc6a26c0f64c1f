public import SupportRuntime
import SupportUtilities

/// One `name=value` pair of a query string, percent-decoded.
public struct HTTPQueryItem: Hashable, Sendable {
    /// The decoded name.
    public var name: String
    /// Empty for `?flag` and `?flag=`.
    public var value: String
    /// An item from decoded text.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// A complete request: head, body and whether the connection stays open after the answer.
public struct HTTPRequest: Sendable, Hashable {
    /// The method token as sent (case-sensitive).
    public var method: HTTPMethod
    /// The request target exactly as sent (origin-form: path and optional query, still percent-encoded).
    public var target: String
    /// The path, percent-decoded (`/codes/a%20b` → `/codes/a b`). Route on ``pathSegments`` when a segment may
    /// hold an encoded `/`.
    public var path: String
    /// The path split on `/` before decoding, each segment percent-decoded; empty segments dropped
    /// (`/v1/codes/ab%2Fc` → `["v1", "codes", "ab/c"]`).
    public var pathSegments: [String]
    /// The query items in order, percent-decoded, `+` read as a space (the form-encoding convention).
    public var queryItems: [HTTPQueryItem]
    /// HTTP/1.1 or HTTP/1.0.
    public var version: HTTPVersion
    /// The header fields in the order received; look up in any case.
    public var headers: HTTPHeaders
    /// Exactly `Content-Length` bytes; empty without one.
    public var body: [UInt8]
    /// Whether the connection may carry another request after this one: HTTP/1.1 unless `Connection: close`;
    /// HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool
    /// The client's address; set by ``HTTPServer``, nil from the bare parser.
    public var peerAddress: SocketAddress?

    /// A request from its parts (the parser makes them; tests and routers may too).
    public init(
        method: HTTPMethod, target: String, path: String, pathSegments: [String], queryItems: [HTTPQueryItem],
        version: HTTPVersion, headers: HTTPHeaders, body: [UInt8], keepAlive: Bool, peerAddress: SocketAddress? = nil
    ) {
        self.method = method
        self.target = target
        self.path = path
        self.pathSegments = pathSegments
        self.queryItems = queryItems
        self.version = version
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
        self.peerAddress = peerAddress
    }

    /// The first value of query item `name`, or nil.
    public func query(_ name: String) -> String? { queryItems.first { $0.name == name }?.value }
}

/// Parsing of the origin-form request target (RFC 9112 §3.2.1, RFC 3986).
enum RequestTarget {
    struct Parts {
        var path: String
        var segments: [String]
        var queryItems: [HTTPQueryItem]
    }

    /// Validates and splits an origin-form target; nil with a message when it is not one.
    static func parse(_ bytes: ArraySlice<UInt8>) -> Result<Parts, HTTPParseError> {
        guard let first = bytes.first else { return .failure(bad("the request target is empty")) }
        guard first == UInt8(ascii: "/") else {
            if bytes.elementsEqual("*".utf8) {
                return .failure(bad("the asterisk-form target (OPTIONS *) is not supported"))
            }
            if bytes.firstRange(of: Array("://".utf8)) != nil {
                return .failure(bad("absolute-form targets are not accepted; send the path only (origin-form)"))
            }
            return .failure(bad("the request target must start with '/' (origin-form)"))
        }
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, hexValue(bytes[index + 1]) != nil, hexValue(bytes[index + 2]) != nil
                else { return .failure(bad("the request target holds a '%' not followed by two hex digits")) }
                index += 3
                continue
            }
            guard isTargetByte(byte) else {
                return .failure(bad("the request target holds a character that must be percent-encoded"))
            }
            index += 1
        }
        let query = bytes.firstIndex(of: UInt8(ascii: "?"))
        let rawPath = bytes[bytes.startIndex..<(query ?? bytes.endIndex)]
        guard let path = decode(rawPath, plusIsSpace: false), !path.utf8.contains(0) else {
            return .failure(bad("the path is not valid percent-encoded UTF-8"))
        }
        var segments: [String] = []
        for raw in rawPath.split(separator: UInt8(ascii: "/")) {
            guard let segment = decode(raw, plusIsSpace: false) else {
                return .failure(bad("the path is not valid percent-encoded UTF-8"))
            }
            segments.append(segment)
        }
        var items: [HTTPQueryItem] = []
        if let query {
            for pair in bytes[(query + 1)...].split(separator: UInt8(ascii: "&")) {
                let equals = pair.firstIndex(of: UInt8(ascii: "="))
                let rawName = pair[pair.startIndex..<(equals ?? pair.endIndex)]
                let rawValue = equals.map { pair[($0 + 1)...] } ?? []
                guard let name = decode(rawName, plusIsSpace: true), let value = decode(rawValue, plusIsSpace: true)
                else { return .failure(bad("the query is not valid percent-encoded UTF-8")) }
                items.append(HTTPQueryItem(name: name, value: value))
            }
        }
        return .success(Parts(path: path, segments: segments, queryItems: items))
    }

    /// Percent-decodes (already validated) bytes into UTF-8 text; nil when the result is not UTF-8.
    static func decode(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]),
                let low = hexValue(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 3
                continue
            }
            out.append(plusIsSpace && byte == UInt8(ascii: "+") ? 0x20 : byte)
            index += 1
        }
        return String(validating: out, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// RFC 3986 pchar / "/" / "?" without "%" (handled apart): unreserved, sub-delims, ":" and "@".
    static func isTargetByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~!$&'()*+,;=:@/?".utf8.contains(byte)
        }
    }

    private static func bad(_ message: String) -> HTTPParseError { HTTPParseError(.badRequest, message) }
}
