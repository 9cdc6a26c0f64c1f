import Foundation
import Testing

@testable import SupporterNode
import SupportSession
import SupportWire
import SupportUtilities
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupporterModel

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

    /// Digests computed by an independent implementation (Python's hashlib over the documented encoding):
    ///
    ///     field = lambda b: struct.pack('>Q', len(b)) + b
    ///     e = field(b'rsup-audit-v1') + field(prev) + struct.pack('>q', id) + struct.pack('>q', time)
    ///     e += b'\x00' if code is None else b'\x01' + field(code.encode())
    ///     e += field(kind.encode()) + field(details.encode()); hashlib.sha256(e).hexdigest()
    @Test func storedDigestsMatchAnIndependentImplementation() throws {
        let store = try SessionStore(path: ":memory:")
        try store.append(
            AuditEvent(
                time: Date(timeIntervalSince1970: 1_700_000_000.123), code: "482913067", kind: .requestSent,
                details: ["supporter": "Ålice"]))
        try store.append(AuditEvent(time: Date(timeIntervalSince1970: -0.005), kind: .error))
        let digests = try store.database.withConnection {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [String] in
            let statement = try connection.prepare("SELECT hex(digest) FROM audit_events ORDER BY id")
            var digests: [String] = []
            while try statement.step() { digests.append(statement.text(at: 0)?.lowercased() ?? "") }
            return digests
        }
        #expect(
            digests == [
                "93f8d65b50a1f4e891209cd47a5d53dc5612ad4302934ce5fa1cb06470def116",
                "b8bb3fbee9f79ad0bd5a81080b68d36952b970742bf0e63109932cc1828c7b08",
            ])
        #expect(try store.verifyAudit().headHex == digests.last)
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
