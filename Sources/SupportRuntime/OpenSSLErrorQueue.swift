import SupportUtilities
internal import COpenSSL

/// Reads OpenSSL's thread-local error queue, which every failing call leaves entries in.
package enum OpenSSLErrorQueue {
    /// Empties the queue; call before any SSL call whose result is checked with `SSL_get_error`.
    package static func clear() { ERR_clear_error() }

    /// Drains the queue and returns its entries' reason strings (oldest first), joined; nil when empty.
    package static func drain() -> String? {
        var reasons: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if let reason = ERR_reason_error_string(code) {
                reasons.append(String(cString: reason))
            } else {
                ERR_error_string_n(code, &buffer, buffer.count)
                reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }

    /// Drains the queue and reports whether it held OpenSSL 3's "unexpected EOF while reading", i.e. the peer closed
    /// TCP without close_notify.
    package static func drainIsUnexpectedEOF() -> (isUnexpectedEOF: Bool, reason: String?) {
        var unexpectedEOF = false
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if rs_ERR_GET_LIB(code) == rs_ERR_LIB_SSL(), rs_ERR_GET_REASON(code) == rs_SSL_R_UNEXPECTED_EOF_WHILE_READING() {
                unexpectedEOF = true
            }
            if let reason = ERR_reason_error_string(code) { reasons.append(String(cString: reason)) }
        }
        return (unexpectedEOF, reasons.isEmpty ? nil : reasons.joined(separator: "; "))
    }
}
