import Foundation
import Testing

@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterCore
import SupporterModel

/// The audit trail's hash chain as the SQLite store writes it.
@Suite struct AuditChainSQLiteTests {
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
}
