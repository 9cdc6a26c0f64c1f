import Foundation
import SupportPostgres
import TestSupport
import Testing

/// The PostgreSQL client against a real server (a throwaway cluster per suite run).
@Suite("PostgreSQL connection", .serialized)
struct PostgresConnectionTests {
    @Test("parameters go as values, never as SQL; rows come back as text with NULLs")
    func parameters() throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let connection = try PostgresConnection(cluster.connectionString)
        try connection.query("CREATE TABLE t (id int PRIMARY KEY, name text)")
        let hostile = "x'); DROP TABLE t; --"
        try connection.query("INSERT INTO t VALUES ($1, $2)", ["1", hostile])
        try connection.query("INSERT INTO t VALUES ($1, $2)", ["2", nil])
        let rows = try connection.query("SELECT id, name FROM t ORDER BY id")
        #expect(rows.columns == ["id", "name"])
        #expect(rows.rows == [["1", hostile], ["2", nil]])
        #expect(rows[0, "name"] == hostile)
    }

    @Test("a refused statement is a typed error with its SQLSTATE; the connection stays usable")
    func errors() throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let connection = try PostgresConnection(cluster.connectionString)
        try connection.query("CREATE TABLE codes (code text PRIMARY KEY)")
        try connection.query("INSERT INTO codes VALUES ($1)", ["123-456-789"])
        do {
            try connection.query("INSERT INTO codes VALUES ($1)", ["123-456-789"], operation: "insert code")
            Issue.record("a duplicate key was accepted")
        } catch {
            #expect(error.isUniqueViolation && error.kind == .query, "\(error)")
            #expect(error.description.hasPrefix("insert code: duplicate key value"), "\(error)")
        }
        #expect(throws: PostgresError.self) { try connection.query("SELECT * FROM missing") }
        #expect(try connection.query("SELECT count(*) AS n FROM codes")[0, "n"] == "1")
    }

    @Test("a transaction that throws leaves nothing behind")
    func rollback() throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let connection = try PostgresConnection(cluster.connectionString)
        try connection.query("CREATE TABLE t (id int PRIMARY KEY)")
        #expect(throws: PostgresError.self) {
            try connection.transaction { (db: PostgresConnection) throws(PostgresError) in
                try db.query("INSERT INTO t VALUES (1)")
                try db.query("INSERT INTO t VALUES (1)")
            }
        }
        #expect(try connection.query("SELECT count(*) AS n FROM t")[0, "n"] == "0")
    }

    @Test("NOTIFY reaches a listener when the sending transaction commits, in order, and not before")
    func notifications() throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let listener = try PostgresConnection(cluster.connectionString)
        let sender = try PostgresConnection(cluster.connectionString)
        try listener.query("LISTEN node_1")
        try sender.query("BEGIN")
        try sender.query("SELECT pg_notify('node_1', $1)", ["first"])
        try sender.query("SELECT pg_notify('node_1', $1)", ["second"])
        #expect(try listener.notifications(timeout: .milliseconds(200)).isEmpty, "delivered before the commit")
        try sender.query("COMMIT")
        var received: [String] = []
        for _ in 0..<20 where received.count < 2 {
            received += try listener.notifications(timeout: .milliseconds(250)).map(\.payload)
        }
        #expect(received == ["first", "second"])
    }

    @Test("sslmode=verify-full against a server with a certificate for localhost: the session is encrypted")
    func verifiedTLS() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let cluster = try ThrowawayPostgres(tls: certificates.server)
        defer { cluster.stop() }
        let connection = try PostgresConnection(cluster.tlsConnectionString(rootCertificate: certificates.caPath))
        let rows = try connection.query("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        #expect(rows[0, "ssl"] == "t")
        #expect(rows[0, "version"]?.hasPrefix("TLSv1.") == true, "\(rows)")
    }

    @Test("a server certificate from a CA the client does not trust is a connection error naming the certificate")
    func untrustedServerCertificate() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let cluster = try ThrowawayPostgres(tls: certificates.server)
        defer { cluster.stop() }
        #expect {
            _ = try PostgresConnection(cluster.tlsConnectionString(rootCertificate: certificates.otherCAPath))
        } throws: { error in
            let failure = error as? PostgresError
            return failure?.kind == .connection && failure?.message.contains("certificate verify failed") == true
        }
        // A missing CA file is refused before anything is sent, with the file named.
        let missing = certificates.directory + "/missing-ca.pem"
        #expect {
            _ = try PostgresConnection(cluster.tlsConnectionString(rootCertificate: missing))
        } throws: { error in
            let failure = error as? PostgresError
            return failure?.kind == .connection && failure?.message.contains("missing-ca.pem") == true
        }
    }

    @Test("a server that is not there is a connection error naming what failed; a restarted one is reconnected")
    func connectionFailures() throws {
        #expect {
            _ = try PostgresConnection("host=127.0.0.1 port=1 user=rsup dbname=rsup connect_timeout=2")
        } throws: { error in
            let failure = error as? PostgresError
            return failure?.kind == .connection && failure?.description.contains("127.0.0.1") == true
        }
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let connection = try PostgresConnection(cluster.connectionString)
        try cluster.restart()
        #expect(throws: PostgresError.self) { try connection.query("SELECT 1") }
        try connection.reconnect()
        #expect(try connection.query("SELECT 1 AS one")[0, "one"] == "1")
    }
}
