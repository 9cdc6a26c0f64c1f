import SupportUtilities
import Testing

@Suite("password hash (scrypt)")
struct PasswordHashTests {
    @Test("the right password verifies, a wrong one does not, and each hash has its own salt")
    func verify() throws {
        let fast = PasswordHash.Parameters(logN: 10, r: 8, p: 1)
        let hash = try PasswordHash.make(password: "correct horse", parameters: fast)
        #expect(hash.verify("correct horse"))
        #expect(!hash.verify("correct horsE"))
        #expect(!hash.verify(""))
        let again = try PasswordHash.make(password: "correct horse", parameters: fast)
        #expect(again.description != hash.description)
        #expect(hash.description.hasPrefix("$scrypt$ln=10,r=8,p=1$"))
    }

    @Test("the stored text reads back and still verifies; weaker parameters ask for an upgrade")
    func storedForm() throws {
        let hash = try PasswordHash.make(password: "pässwörd ✓", parameters: .init(logN: 11, r: 8, p: 1))
        let read = try #require(PasswordHash(hash.description))
        #expect(read == hash)
        #expect(read.verify("pässwörd ✓"))
        #expect(read.needsUpgrade(to: .standard))
        #expect(!read.needsUpgrade(to: .init(logN: 11, r: 8, p: 1)))
    }

    @Test("the standard parameters: N = 2^15, r = 8, p = 1")
    func standard() throws {
        let hash = try PasswordHash.make(password: "x")
        #expect(hash.description.hasPrefix("$scrypt$ln=15,r=8,p=1$"))
        #expect(hash.verify("x"))
    }

    @Test(
        "text that is not a hash we can check is refused, parameters that would cost gigabytes included",
        arguments: [
            "", "plain", "$scrypt$", "$bcrypt$ln=15,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "$scrypt$ln=30,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "$scrypt$ln=15,r=64,p=1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "$scrypt$ln=15,r=8$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "$scrypt$ln=15,r=8,p=1$!!$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "$scrypt$ln=15,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA==$AAAA",
        ])
    func refused(text: String) {
        #expect(PasswordHash(text) == nil)
    }
}
