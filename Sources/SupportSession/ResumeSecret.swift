import SupportWire
import SupportUtilities

/// Resume secrets (SPEC §15.2): 32 random bytes as 43 characters of unpadded base64url.
public enum ResumeSecret {
    /// A fresh secret. `SystemRandomNumberGenerator` reads the kernel's CSPRNG (getrandom on Linux), as API tokens do.
    @Sendable public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(43)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value = 0
            for byte in chunk { value = value << 8 | Int(byte) }
            value <<= 8 * (3 - chunk.count)
            for position in 0...chunk.count { output.append(alphabet[(value >> (18 - 6 * position)) & 0x3F]) }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }
}
