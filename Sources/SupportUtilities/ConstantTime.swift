/// Comparisons of secrets whose time depends on neither where the inputs differ nor, beyond the longer one's length,
/// on their lengths: the one comparison the project uses for tokens, digests, resume secrets, CSRF tokens, password
/// keys and MACs.
public enum ConstantTime {
    /// Whether `lhs` and `rhs` hold the same bytes; visits every byte of the longer one, without an early exit.
    public static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: lhs.count ^ rhs.count) | (lhs.count == rhs.count ? 0 : 1)
        for index in 0..<max(lhs.count, rhs.count) {
            difference |= (index < lhs.count ? lhs[index] : 0) ^ (index < rhs.count ? rhs[index] : 0)
        }
        return difference == 0
    }

    /// Whether `lhs` and `rhs` are the same UTF-8 bytes (``equal(_:_:)-([UInt8],[UInt8])``).
    public static func equal(_ lhs: String, _ rhs: String) -> Bool { equal(Array(lhs.utf8), Array(rhs.utf8)) }
}
