package import SupporterStore
import Dispatch
import Foundation
import Synchronization
package import SupportPostgres
package import SupporterCore
package import SupportUtilities
import SupportWire
import SupporterModel


/// Listens, on a PostgreSQL connection and a thread of its own (libpq blocks), for the changes other nodes commit
/// (channel `rsup_changes`) and for the commands and answers sent to this node (its own channel), reads the rows
/// they name, and hands them to the node. Notifications arrive after the commit that sent them, in commit order.
///
/// Nothing is polled in steady state: the connection waits in `select` for the next notification. Once per presence
/// lease it reads which devices other nodes hold, so that a node that died without a word (its leases lapsed) stops
/// showing as holding them. A lost connection is reopened (1 s, doubling to 10 s); at every LISTEN (the first one
/// too) codes, tokens, accounts, login sessions, presence and answers are read again, since notifications sent while
/// not listening are lost.
package final class ClusterListener: Sendable {
    private let member: ClusterMember
    private let connectionString: String
    private let location: String
    private let logger: NodeLogger
    private let deliver: @Sendable (ClusterNews) -> Void
    private let stopping = Atomic<Bool>(false)
    private let connected = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let listening = DispatchSemaphore(value: 0)
    /// A pipe whose write end ``stop()`` writes to: the listening thread's wait for notifications ends at once
    /// instead of after up to a second (a lone node's drain waited for it). Both ends are closed in `deinit`, after
    /// the thread (which holds the listener) has returned.
    private let wake: (read: Int32, write: Int32)
    private let metrics: ClusterMetrics

    package init(
        connectionString: String, member: ClusterMember, location: String, logger: NodeLogger,
        metrics: ClusterMetrics, deliver: @escaping @Sendable (ClusterNews) -> Void
    ) {
        self.metrics = metrics
        self.connectionString = connectionString
        self.member = member
        self.location = location
        self.logger = logger
        self.deliver = deliver
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, O_NONBLOCK)
            }
        }
        wake = (ends[0], ends[1])
        let thread = Thread { [self] in self.run() }
        thread.name = "rsup-cluster"
        thread.start()
    }

    /// Whether the listening connection is up now (LISTEN in place); false while it is reopened.
    package var isConnected: Bool { connected.load(ordering: .acquiring) }

    /// Waits until the first `LISTEN` is in place (what other nodes commit from then on reaches this node); false
    /// after `timeout` (the listener keeps trying in the background).
    package func waitUntilListening(timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        return listening.wait(timeout: .now() + .milliseconds(milliseconds)) == .success
    }

    deinit {
        if wake.read >= 0 { close(wake.read) }
        if wake.write >= 0 { close(wake.write) }
    }

    /// Stops listening; returns once the thread has closed its connection (at most 3 s, when it is still reopening
    /// one).
    package func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if wake.write >= 0 {
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }
        _ = finished.wait(timeout: .now() + .seconds(3))
    }

    private func run() {
        defer { finished.signal() }
        var connection: PostgresConnection?
        var pause = Duration.seconds(1)
        var nextPresenceCheck = ContinuousClock.now
        var connectedBefore = false
        while !stopping.load(ordering: .acquiring) {
            do throws(StoreError) {
                if connection == nil {
                    // The first time too: codes committed between the node's start and this LISTEN are read here.
                    connection = try open(resync: true)
                    connected.store(true, ordering: .releasing)
                    if connectedBefore { metrics.listenerReconnects.increment() } else { listening.signal() }
                    connectedBefore = true
                    pause = .seconds(1)
                    nextPresenceCheck = .now
                }
                guard let open = connection else { continue }
                if ContinuousClock.now >= nextPresenceCheck {
                    deliver(.presenceSnapshot(try Self.presence(open, except: member.nodeID, location: location)))
                    nextPresenceCheck = .now + member.presenceLease
                }
                let wait = min(Duration.seconds(1), max(.zero, nextPresenceCheck - .now))
                let notes: [PostgresNotification]
                do { notes = try open.notifications(timeout: wait, wakingOn: wake.read >= 0 ? wake.read : nil) } catch {
                    throw PostgresStoreEngine.storeError(error, location: location)
                }
                try handle(notes, open)
            } catch {
                logger.log(.warning, "cluster: listening for other nodes failed (\(error)); retrying in \(pause)")
                connected.store(false, ordering: .releasing)
                connection?.close()
                connection = nil
                sleep(pause)
                pause = min(pause * 2, .seconds(10))
            }
        }
        connected.store(false, ordering: .releasing)
        connection?.close()
    }

    private func sleep(_ duration: Duration) {
        let end = ContinuousClock.now + duration
        while !stopping.load(ordering: .acquiring), ContinuousClock.now < end {
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    private func open(resync: Bool) throws(StoreError) -> PostgresConnection {
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(connectionString)
            try connection.query("LISTEN \(ClusterMember.changesChannel)", operation: "listen for other nodes")
            try connection.query("LISTEN \(member.commandChannel)", operation: "listen for commands")
        } catch {
            throw PostgresStoreEngine.storeError(error, location: location)
        }
        if resync {
            // Everything the node keeps in memory from the store, as it is now: what other nodes committed before
            // this LISTEN (or while it was lost) reaches this node too. Login sessions that ended meanwhile end by
            // their own lifetime here.
            let transaction = PostgresStoreTransaction(connection, location: location)
            deliver(.codeSnapshot(try PostgresStoreEngine.codes(transaction)))
            for (digest, record) in try PostgresStoreEngine.tokens(transaction, id: nil) {
                deliver(.token(id: record.id, digest: digest, record: record))
            }
            for account in try PostgresStoreEngine.accounts(transaction) { deliver(.account(account.login, account)) }
            deliver(.loginSessionSnapshot(try PostgresStoreEngine.loginSessions(transaction)))
            for row in try PostgresStoreEngine.backoffRows(transaction) { deliver(.backoff(key: row.key, row)) }
        }
        // Answers given while this node was not listening (a caller may still wait for one).
        let answers = try PostgresStoreTransaction(connection, location: location).run(
            "SELECT id, result FROM node_commands WHERE origin_node = $1 AND done_at >= rsup_now_ms() - 60000",
            [member.nodeID], "read answers to this node's commands")
        for row in answers.rows {
            guard let id = row[0].flatMap({ Int64($0) }), let text = row[1] else { continue }
            deliver(.answer(id: id, ClusterCommandAnswer.decode(text), reread: true))
        }
        // Commands sent while this node was not listening.
        for (id, origin, command) in try Self.waitingCommands(connection, for: member.nodeID, location: location) {
            deliver(.command(id: id, origin: origin, command))
        }
        return connection
    }

    /// The notifications of one wake-up, in order. Presence changes come in bursts (a registration storm, a drain,
    /// a node's devices failing over): when several arrive together their rows are read in one statement, not one
    /// round trip each — with N nodes every presence change is read by N − 1 of them.
    private func handle(_ notes: [PostgresNotification], _ connection: PostgresConnection) throws(StoreError) {
        var changedPresence: [String] = []
        for note in notes where note.channel == ClusterMember.changesChannel {
            guard let (origin, change) = ClusterChange.parse(note.payload), origin != member.nodeID,
                case .presence(let code) = change
            else { continue }
            changedPresence.append(code)
        }
        let presence =
            changedPresence.count > 1
            ? try Self.presence(connection, except: member.nodeID, among: changedPresence, location: location) : nil
        for note in notes { try handle(note, connection, presence: presence) }
    }

    /// One notification; `presence` holds the rows its batch read already (``handle(_:_:)``).
    private func handle(
        _ note: PostgresNotification, _ connection: PostgresConnection, presence: [String: RemotePresence]?
    ) throws(StoreError) {
        let transaction = PostgresStoreTransaction(connection, location: location)
        if note.channel == member.commandChannel {
            let parts = note.payload.split(separator: " ")
            guard parts.count == 2, let id = Int64(parts[1]) else { return }
            if parts[0] == "cmd" {
                for (id, origin, command) in try Self.waitingCommands(connection, for: member.nodeID, only: id, location: location) {
                    deliver(.command(id: id, origin: origin, command))
                }
            } else if parts[0] == "ans" {
                let rows = try transaction.run(
                    "SELECT result FROM node_commands WHERE id = $1 AND origin_node = $2", [String(id), member.nodeID],
                    "read a command's answer")
                guard rows.count == 1, let text = rows[0, "result"] else { return }
                deliver(.answer(id: id, ClusterCommandAnswer.decode(text), reread: false))
            }
            return
        }
        guard note.channel == ClusterMember.changesChannel, let (origin, change) = ClusterChange.parse(note.payload),
            origin != member.nodeID
        else { return }
        switch change {
        case .code(let code):
            deliver(.code(code, try PostgresStoreEngine.codes(transaction, only: code).first))
        case .presence(let code):
            let all: [String: RemotePresence]
            if let presence {
                all = presence
            } else {
                all = try Self.presence(transaction.connection, except: member.nodeID, only: code, location: location)
            }
            deliver(.presence(code, all[code]))
        case .account(let login):
            deliver(.account(login, try PostgresStoreEngine.accounts(transaction, login: login).first))
        case .loginSession(let hex):
            guard let digest = AuditChain.bytes(hex: hex) else { return }
            deliver(.loginSession(digest: digest, try PostgresStoreEngine.loginSessions(transaction, digest: digest).first))
        case .loginSessions(let login):
            deliver(.loginSessionsEnded(login: login))
        case .token(let id):
            let token = try PostgresStoreEngine.tokens(transaction, id: id).first
            deliver(.token(id: id, digest: token?.digest, record: token?.record))
        case .backoff(let key):
            deliver(.backoff(key: key, try PostgresStoreEngine.backoffRows(transaction, key: key).first))
        }
    }

    /// Live presence rows of other nodes (leases not run out, by the database's clock).
    package static func presence(
        _ connection: PostgresConnection, except node: String, only code: String? = nil, location: String
    ) throws(StoreError) -> [String: RemotePresence] {
        let rows = try PostgresStoreTransaction(connection, location: location).run(
            """
            SELECT code, node_id, state, device_name FROM device_presence
            WHERE lease_until >= rsup_now_ms() AND node_id <> $1 AND ($2::text IS NULL OR code = $2)
            """, [node, code], "read device presence")
        return remotePresence(rows.rows)
    }

    /// Live presence rows of other nodes for `codes` (one statement, the codes as one array parameter).
    package static func presence(
        _ connection: PostgresConnection, except node: String, among codes: [String], location: String
    ) throws(StoreError) -> [String: RemotePresence] {
        let rows = try PostgresStoreTransaction(connection, location: location).run(
            """
            SELECT code, node_id, state, device_name FROM device_presence
            WHERE lease_until >= rsup_now_ms() AND node_id <> $1 AND code = ANY($2::text[])
            """, [node, PostgresArray.text(codes)], "read device presence")
        return remotePresence(rows.rows)
    }

    private static func remotePresence(_ rows: [[String?]]) -> [String: RemotePresence] {
        var all: [String: RemotePresence] = [:]
        for row in rows {
            guard let code = row[0], let node = row[1], let state = row[2].flatMap(SessionCodeState.init(rawValue:))
            else { continue }
            all[code] = RemotePresence(node: node, state: state, deviceName: row[3])
        }
        return all
    }

    /// Commands for `node` not done yet, oldest first — only those younger than the asking node's wait
    /// (``ClusterPeers/answerTimeout``): an older one was answered `busy` there, and carrying it out now would surprise
    /// everyone (a prompt minutes late, an end that hits a newer session).
    package static func waitingCommands(
        _ connection: PostgresConnection, for node: String, only id: Int64? = nil, location: String
    ) throws(StoreError) -> [(Int64, String, ClusterCommand)] {
        let rows = try PostgresStoreTransaction(connection, location: location).run(
            """
            SELECT id, origin_node, command FROM node_commands
            WHERE target_node = $1 AND done_at IS NULL AND ($2::bigint IS NULL OR id = $2)
                AND created_at >= rsup_now_ms() - 15000
            ORDER BY id
            """, [node, id.map { String($0) }], "read commands for this node")
        return rows.rows.compactMap { row in
            guard let id = row[0].flatMap({ Int64($0) }), let origin = row[1],
                let command = row[2].flatMap(ClusterCommand.decode)
            else { return nil }
            return (id, origin, command)
        }
    }
}
