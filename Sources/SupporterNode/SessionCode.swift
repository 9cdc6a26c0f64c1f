import SupportSession

/// The kind of a session code and its lifecycle state as the supporter node lists it.
public enum SessionCodeState: String, Sendable, Hashable, CaseIterable {
    /// Created, valid, no device on it.
    case open
    /// A device registered and waits.
    case online
    /// A connection request waits for the device's answer.
    case requestPending = "request_pending"
    /// The session runs.
    case active
    case closed
    case expired
}

/// A session code and what the node knows of it.
public struct SessionCodeInfo: Sendable, Hashable {
    public var code: String
    public var type: SessionCodeType
    public var description: String?
    public var createdAt: Duration
    /// Monotonic time after which the code is expired.
    public var validUntil: Duration
    public var closedAt: Duration?
    public var state: SessionCodeState
    /// The supporter named in the last connection request.
    public var assignedSupporter: String?
    /// The device on the code, by the name it gave in HELLO.
    public var deviceName: String?
}

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
