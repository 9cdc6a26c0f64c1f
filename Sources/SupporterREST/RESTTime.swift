public import Foundation
import Glibc
import SupportUtilities

/// Times on the wire (protocol/openapi.yaml): RFC 3339. The node sends UTC with milliseconds
/// (`2026-11-30T10:15:00.000Z`); it accepts any offset, with fractional seconds or without.
public enum RESTTime {
    /// `date` in UTC with milliseconds (rounded to the millisecond the store keeps, so an answer reads the same before
    /// and after a restart).
    public static func format(_ date: Date) -> String {
        let milliseconds = date.unixMilliseconds
        var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(Int(parts.tm_year) + 1900, 4))-\(pad(Int(parts.tm_mon) + 1, 2))-\(pad(Int(parts.tm_mday), 2))T"
            + "\(pad(Int(parts.tm_hour), 2)):\(pad(Int(parts.tm_min), 2)):\(pad(Int(parts.tm_sec), 2))."
            + "\(pad(fraction, 3))Z"
    }

    /// An RFC 3339 time (`Z` or an offset; fractional seconds optional), or nil.
    public static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
