import Testing

@testable import SupporterCore

/// The digest format of the audit trail's hash chain.
@Suite struct AuditChainTests {
    static func digest(
        previous: [UInt8] = AuditChain.genesis, id: Int64 = 1, time: Int64 = 0, code: String? = nil,
        kind: String = "k", details: String = "{}"
    ) -> [UInt8] {
        AuditChain.digest(
            previous: previous, id: id, time: time, code: code.map { Array($0.utf8) }, kind: Array(kind.utf8),
            details: Array(details.utf8))
    }

    @Test func everyFieldIsSeparatedFromItsNeighbours() {
        let distinct: [[UInt8]] = [
            Self.digest(code: "a", kind: "bc"), Self.digest(code: "ab", kind: "c"),
            Self.digest(code: nil, kind: "k"), Self.digest(code: "", kind: "k"),
            Self.digest(kind: "k", details: "{}x"), Self.digest(kind: "k{", details: "}x"),
            Self.digest(id: 2), Self.digest(time: 1), Self.digest(previous: [UInt8](repeating: 1, count: 32)),
            Self.digest(id: 1, time: 2), Self.digest(id: 2, time: 1),
        ]
        #expect(Set(distinct).count == distinct.count)
        #expect(Self.digest(code: "x") == Self.digest(code: "x"))
    }

    @Test func hexRoundTrips() {
        let bytes: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xAB, 0xFF]
        #expect(AuditChain.hex(bytes) == "00017f80abff")
        #expect(AuditChain.bytes(hex: "00017f80abff") == bytes)
        #expect(AuditChain.bytes(hex: "00017F80ABFF") == bytes)
        #expect(AuditChain.bytes(hex: "0") == nil)
        #expect(AuditChain.bytes(hex: "zz") == nil)
    }
}
