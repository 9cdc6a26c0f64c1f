/// What a receiver answered to an ``HTTPClient`` exchange: the final status (interim 1xx responses skipped), its
/// header fields, and the beginning of the body.
package struct HTTPClientResponse: Sendable {
    /// The status code, 200…599 (or 1xx never: interim responses are skipped).
    package var status: Int
    /// The reason phrase, possibly empty; informational only.
    package var reason: String
    /// The header fields, in order, values without surrounding whitespace.
    package var headers: [(name: String, value: String)]
    /// The body's first bytes, at most the exchange's `maxBodyBytes`; a chunked body decoded (see ``HTTPClient``).
    package var bodyPrefix: [UInt8]
    /// Whether the body may go on beyond ``bodyPrefix``: its end was not seen within the bytes read (a longer body,
    /// a connection that ended or a deadline that passed before the body's end).
    package var isBodyTruncated: Bool

    package init(
        status: Int, reason: String, headers: [(name: String, value: String)], bodyPrefix: [UInt8],
        isBodyTruncated: Bool
    ) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.bodyPrefix = bodyPrefix
        self.isBodyTruncated = isBodyTruncated
    }

    /// The first value of the header field `name` (compared without regard to ASCII case), or nil.
    package func headerValue(_ name: String) -> String? {
        headers.first { HTTPHeaders.namesEqual($0.name, name) }?.value
    }
}
