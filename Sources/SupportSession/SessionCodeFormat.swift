import SupportWire
import SupportUtilities

/// Generates and checks session codes: nine random digits as `123-456-789`.
///
/// A billion codes are guessable only with many attempts, which the registration back-off (per code and per source
/// address) makes slow.
public enum SessionCodeFormat {
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = (0..<9).map { _ in Character(String(UInt8.random(in: 0...9, using: &generator))) }
        return String(digits[0..<3]) + "-" + String(digits[3..<6]) + "-" + String(digits[6..<9])
    }

    /// Whether `text` has the code format (what a device should send).
    public static func isWellFormed(_ text: String) -> Bool {
        let scalars = Array(text.utf8)
        guard scalars.count == 11 else { return false }
        for (index, byte) in scalars.enumerated() {
            if index == 3 || index == 7 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return false }
            }
        }
        return true
    }
}
