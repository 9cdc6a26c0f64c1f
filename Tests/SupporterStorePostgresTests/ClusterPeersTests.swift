import Foundation
import SupportPostgres
import TestSupport
import Testing
import SupporterModel
@testable import SupporterStore
@testable import SupporterStorePostgres
@testable import SupporterCore

/// Routed commands between two nodes' `ClusterPeers` on one real database (issue 22 items 4 and 7): a command is
/// carried out or withdrawn, never both, and a sender that gets no answer says which of the two happened.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ClusterPeersTests {
    /// Two nodes' peers on `database`, with their engines (stop them after use).
    private static func pair(_ database: ThrowawayPostgres) throws -> (ClusterPeers, ClusterPeers) {
        func peers(_ id: String) throws -> ClusterPeers {
            let member = ClusterMember(nodeID: id, presenceLease: .seconds(10))
            let engine = try PostgresStoreEngine(
                connectionString: database.connectionString, logger: .disabled, member: member)
            return ClusterPeers(member: member, engine: engine, connectionString: database.connectionString)
        }
        return (try peers("nodea"), try peers("nodeb"))
    }

    /// Runs `body` with a throwaway database and two nodes' peers on it, stopping them after.
    private static func withPair(
        _ body: (ThrowawayPostgres, ClusterPeers, ClusterPeers) async throws -> Void
    ) async throws {
        let database = try ThrowawayPostgres()
        defer { database.stop() }
        let (a, b) = try pair(database)
        defer {
            a.engine.stop()
            b.engine.stop()
        }
        try await body(database, a, b)
    }

    private static let end = ClusterCommand(kind: .end, code: "123456789", actor: .init(.local))

    /// A command row from node A to node B, written as `send` writes it; its id.
    private static func insertCommand(_ connection: PostgresConnection) throws -> Int64 {
        let rows = try connection.query(
            """
            INSERT INTO node_commands (origin_node, target_node, code, command, created_at)
            VALUES ('nodea', 'nodeb', '123456789', $1, rsup_now_ms()) RETURNING id
            """, [end.json()])
        return try #require(rows[0, "id"].flatMap { Int64($0) })
    }

    @Test func aCommandIsEitherTakenByItsTargetOrWithdrawnByItsSenderNeverBoth() async throws {
        try await Self.withPair { database, a, b in
            let connection = try PostgresConnection(database.connectionString)
            defer { connection.close() }

            let taken = try Self.insertCommand(connection)
            #expect(await b.take(taken, Self.end) == true)
            #expect(await a.withdraw(taken) == false, "taken first: the sender cannot withdraw it")
            #expect(await b.take(taken, Self.end) == false, "read twice, carried out once")

            let withdrawn = try Self.insertCommand(connection)
            #expect(await a.withdraw(withdrawn) == true)
            #expect(await b.take(withdrawn, Self.end) == false, "withdrawn first: the target never carries it out")
            let rows = try connection.query("SELECT id, result, done_at IS NOT NULL AS done FROM node_commands ORDER BY id")
            #expect(rows[0, "result"] == "taken" && rows[0, "done"] == "f")
            #expect(rows[1, "result"] == "withdrawn" && rows[1, "done"] == "t")
        }
    }

    @Test func aCommandNobodyTakesIsAnsweredWithdrawnNothingDone() async throws {
        try await Self.withPair { database, a, b in
            // Node B never reads its commands (frozen): after the wait the command is withdrawn and says so.
            let answer = try await a.send(Self.end, to: "nodeb", timeout: .milliseconds(200))
            let failure = try #require(answer.failure)
            #expect(failure.kind == .busy)
            #expect(failure.description.contains("withdrawn: nothing was done"), "\(failure)")
            let connection = try PostgresConnection(database.connectionString)
            defer { connection.close() }
            let id = try #require(try connection.query("SELECT id FROM node_commands")[0, "id"].flatMap { Int64($0) })
            #expect(await b.take(id, Self.end) == false, "node B, thawed, must not carry out what its sender gave up on")
        }
    }

    @Test func aTakenCommandIsAnsweredWithItsOutcome() async throws {
        try await Self.withPair { database, a, b in
            #expect(a.start(logger: .disabled, timeout: .seconds(30)) { news in
                if case .answer(let id, let answer, let reread) = news { a.answered(id, answer, onlyIfWaiting: reread) }
            })
            defer { a.stop() }
            let sent = Task { try await a.send(Self.end, to: "nodeb", timeout: .seconds(60)) }
            let connection = try PostgresConnection(database.connectionString)
            defer { connection.close() }
            // Polls for the row `send` writes on its engine's thread: nothing else tells when it is there.
            let found: Int64 = try await eventually("the command row") {
                try connection.query("SELECT id FROM node_commands")[0, "id"].flatMap { Int64($0) }
            }
            let id: Int64? = found
            #expect(await b.take(try #require(id), Self.end))
            await b.answer(try #require(id), to: "nodea", ClusterCommandAnswer(requestID: 7))
            let answer = try await sent.value
            #expect(answer.failure == nil)
            #expect(answer.requestID == 7)
        }
    }
}
