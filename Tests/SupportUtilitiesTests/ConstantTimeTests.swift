import SupportUtilities
import Testing

@Suite struct ConstantTimeTests {
    @Test(arguments: [
        ("secret", "secret", true), ("secret", "secreT", false), ("secret", "secrets", false), ("", "", true),
        ("a", "", false),
    ])
    func comparesWholeSecrets(lhs: String, rhs: String, equal: Bool) {
        #expect(ConstantTime.equal(lhs, rhs) == equal)
        #expect(ConstantTime.equal(Array(lhs.utf8), Array(rhs.utf8)) == equal)
    }

    @Test func lengthsThatDifferByAMultipleOf256AreStillUnequal() {
        #expect(!ConstantTime.equal([UInt8](repeating: 0, count: 256), []))
    }

    /// RFC 4231, test case 2.
    @Test func hmacSHA256MatchesTheRFCVector() {
        let mac = SHA256.authenticationCode(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
