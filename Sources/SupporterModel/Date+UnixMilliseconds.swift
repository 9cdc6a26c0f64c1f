public import Foundation
import SupportUtilities

extension Date {
    /// Milliseconds since 1970, rounded to the nearest; clamped (never trapping) for dates beyond ±292 million years.
    public var unixMilliseconds: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded()
        guard !milliseconds.isNaN else { return 0 }
        return Int64(exactly: milliseconds) ?? (milliseconds < 0 ? .min : .max)
    }

    public init(unixMilliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(unixMilliseconds) / 1000)
    }
}
