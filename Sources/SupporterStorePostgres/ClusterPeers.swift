import Foundation
import Synchronization
import SupportPostgres
public import SupporterCore
public import SupporterStore
import SupportWire
public import SupportUtilities
public import SupporterModel

/// The other nodes sharing this node's PostgreSQL database, as this node reaches them: commands for devices they
/// hold go out through the store engine's thread (a `node_commands` row and a `NOTIFY` in one transaction), answers
/// come back through ``ClusterListener``. Never blocks a thread while waiting.
public final class ClusterPeers: ClusterBus {
    package let member: ClusterMember
    package let engine: PostgresStoreEngine
    private let connectionString: String
    /// How long the asking node waits for the holding node's answer.
    package static let answerTimeout: Duration = ClusterCommand.answerTimeout
    /// Most commands waiting for an answer at once; beyond it new ones are refused (`busy`).
    package static let maximumWaiting = 1_024

    private enum Slot {
        case waiting(CheckedContinuation<ClusterCommandAnswer, Never>)
        /// An answer that came before its caller started waiting, kept briefly.
        case answered(ClusterCommandAnswer, at: ContinuousClock.Instant)
    }
    private let slots = Mutex<[Int64: Slot]>([:])
    /// Ids of commands this node has taken, newest last (bounded), so a command read twice (at a reconnection and by
    /// its notification) is carried out once.
    private let taken = Mutex<[Int64]>([])
    private let listener = Mutex<ClusterListener?>(nil)

    /// The peers of the node whose engine is `engine`, on the database of `connectionString` (libpq's form).
    public init(member: ClusterMember, engine: PostgresStoreEngine, connectionString: String) {
        self.member = member
        self.engine = engine
        self.connectionString = connectionString
    }

    public var nodeID: String { member.nodeID }
    public var presenceLease: Duration { member.presenceLease }

    public func start(logger: NodeLogger, timeout: Duration, deliver: @escaping @Sendable (ClusterNews) -> Void) -> Bool {
        let created = ClusterListener(
            connectionString: connectionString, member: member, location: engine.location, logger: logger,
            metrics: engine.clusterMetrics, deliver: deliver)
        listener.withLock { $0 = created }
        return created.waitUntilListening(timeout: timeout)
    }

    public func watchPresence(_ watch: PresenceWatch) { engine.watchPresence(watch) }

    public var isListening: Bool { listener.withLock { $0?.isConnected ?? false } }

    public var metrics: ClusterMetrics { engine.clusterMetrics }

    public func stop() {
        let stopping = listener.withLock { listener in
            defer { listener = nil }
            return listener
        }
        stopping?.stop()
    }

    /// Sends `command` to `node` and waits for its answer (or throws `busy` after `timeout`, at most
    /// ``answerTimeout``).
    public func send(_ command: ClusterCommand, to node: String, timeout: Duration) async throws(SupporterNodeError)
        -> ClusterCommandAnswer
    {
        let timeout = min(timeout, Self.answerTimeout)
        // A measurement at the I/O edge, deciding nothing: supporters' commands only (a device's `vacate` is the
        // node's own housekeeping). Counted however the call ends.
        let sent = ContinuousClock.now
        var outcome: ClusterCommandAnswer?
        defer {
            if command.kind != .vacate {
                let metrics = engine.clusterMetrics
                metrics.routedLatency.observe(ContinuousClock.now - sent)
                switch outcome {
                case let answer? where answer.error == nil: metrics.routedAnswered.increment()
                case let answer? where answer.errorKind != "busy" && answer.errorKind != "store":
                    metrics.routedRefused.increment()
                default: metrics.routedFailed.increment()
                }
            }
        }
        guard slots.withLock({ $0.count }) < Self.maximumWaiting else {
            throw SupporterNodeError("too many commands wait for other nodes; try again shortly", kind: .busy)
        }
        let origin = member.nodeID
        let text = command.json()
        let id: Int64
        do throws(StoreError) {
            id = try await engine.perform("send a command to another node") {
                (connection: PostgresConnection) throws(StoreError) -> Int64 in
                let location = "cluster"
                do throws(PostgresError) {
                    return try connection.transaction { (connection: PostgresConnection) throws(PostgresError) -> Int64 in
                        let rows = try connection.query(
                            """
                            INSERT INTO node_commands (origin_node, target_node, code, command, created_at)
                            VALUES ($1, $2, $3, $4, rsup_now_ms()) RETURNING id
                            """, [origin, node, command.code, text], operation: "send a command to another node")
                        let id = rows[0, "id"].flatMap { Int64($0) } ?? 0
                        try connection.query(
                            "SELECT pg_notify($1, $2)", [ClusterMember.commandChannel(of: node), "cmd \(id)"],
                            operation: "wake the other node")
                        return id
                    }
                } catch {
                    throw PostgresStoreEngine.storeError(error, location: location)
                }
            }
        } catch {
            throw SupporterNodeError(store: error)
        }
        let answer: ClusterCommandAnswer = await withCheckedContinuation { continuation in
            let early = slots.withLock { slots -> ClusterCommandAnswer? in
                if case .answered(let answer, _) = slots[id] {
                    slots[id] = nil
                    return answer
                }
                slots[id] = .waiting(continuation)
                return nil
            }
            if let early { continuation.resume(returning: early) }
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                guard let self, self.isWaiting(id) else { return }
                // Not answered in time: withdraw it, unless the holder took it — then its outcome is on its way.
                let unknown =
                    "whether it was carried out is unknown: the audit trail of the code says (what a node carries out "
                    + "is audited before it answers)"
                switch await self.withdraw(id) {
                case true?:
                    self.answered(
                        id,
                        ClusterCommandAnswer(
                            SupporterNodeError(
                                "node \(node), which holds the device, did not take the command in time; it was "
                                    + "withdrawn: nothing was done", kind: .busy)),
                        onlyIfWaiting: true)
                case false?:
                    try? await Task.sleep(for: Self.takenPatience)
                    self.answered(
                        id,
                        ClusterCommandAnswer(
                            SupporterNodeError("node \(node) took the command but its answer did not come; \(unknown)", kind: .store)),
                        onlyIfWaiting: true)
                case nil:
                    self.answered(
                        id,
                        ClusterCommandAnswer(
                            SupporterNodeError(
                                "node \(node) did not answer and the database cannot be reached to withdraw the "
                                    + "command; \(unknown)", kind: .store)),
                        onlyIfWaiting: true)
                }
            }
        }
        outcome = answer
        return answer
    }

    /// After the holder took a command, how long beyond the sender's wait its answer may take before the outcome is
    /// reported unknown: carrying a command out is a local step there (a frame, a store commit).
    package static let takenPatience: Duration = .seconds(5)

    /// Whether a caller still waits for command `id`.
    private func isWaiting(_ id: Int64) -> Bool {
        slots.withLock { slots in
            if case .waiting = slots[id] { return true }
            return false
        }
    }

    /// Withdraws command `id`, which its target has not answered in time: true when it was withdrawn (its row now
    /// says so, and the target can no longer take it), false when the target took it first, nil when the database
    /// cannot say. The row's `result` is the one place both sides decide on, each with one conditional update.
    func withdraw(_ id: Int64) async -> Bool? {
        try? await engine.perform("withdraw a command another node did not take") {
            (connection: PostgresConnection) throws(StoreError) -> Bool in
            do throws(PostgresError) {
                return try connection.query(
                    """
                    UPDATE node_commands SET done_at = rsup_now_ms(), result = 'withdrawn'
                    WHERE id = $1 AND result IS NULL RETURNING id
                    """, [String(id)], operation: "withdraw a command").count == 1
            } catch {
                throw PostgresStoreEngine.storeError(error, location: "cluster")
            }
        }
    }

    /// An answer arrived (or the wait timed out): the waiting caller gets it once.
    public func answered(_ id: Int64, _ answer: ClusterCommandAnswer, onlyIfWaiting: Bool) {
        let continuation = slots.withLock { slots -> CheckedContinuation<ClusterCommandAnswer, Never>? in
            switch slots[id] {
            case .waiting(let continuation):
                slots[id] = nil
                return continuation
            case .answered, nil:
                // The answer came before the caller started waiting: keep it a little. Answers nobody came for (their
                // caller timed out) are dropped after the answer timeout, so they never pile up.
                guard !onlyIfWaiting else { return nil }
                let now = ContinuousClock.now
                slots = slots.filter { _, slot in
                    if case .answered(_, let at) = slot { return now - at < Self.answerTimeout }
                    return true
                }
                if slots.count < Self.maximumWaiting { slots[id] = .answered(answer, at: now) }
                return nil
            }
        }
        continuation?.resume(returning: answer)
    }

    /// Whether this node takes command `id`: new to it (a command read twice, at a reconnection and by its
    /// notification, runs once) and not withdrawn by its sender — its row's `result` goes from empty to `taken` here,
    /// or to `withdrawn` by the sender, never both.
    public func take(_ id: Int64, _ command: ClusterCommand) async -> Bool {
        let fresh = taken.withLock { taken in
            guard !taken.contains(id) else { return false }
            taken.append(id)
            if taken.count > 4_096 { taken.removeFirst(taken.count - 4_096) }
            return true
        }
        guard fresh else { return false }
        guard command.kind.needsExclusiveTake else { return true }
        let took = try? await engine.perform("take another node's command") {
            (connection: PostgresConnection) throws(StoreError) -> Bool in
            do throws(PostgresError) {
                return try connection.query(
                    "UPDATE node_commands SET result = 'taken' WHERE id = $1 AND result IS NULL RETURNING id",
                    [String(id)], operation: "take a command").count == 1
            } catch {
                throw PostgresStoreEngine.storeError(error, location: "cluster")
            }
        }
        return took == true
    }

    /// Records this node's answer to command `id` from `origin`, and wakes `origin`.
    public func answer(_ id: Int64, to origin: String, _ answer: ClusterCommandAnswer) async {
        let text = answer.json()
        do throws(StoreError) {
            try await engine.perform("answer another node's command") {
                (connection: PostgresConnection) throws(StoreError) -> Void in
                do throws(PostgresError) {
                    try connection.transaction { (connection: PostgresConnection) throws(PostgresError) -> Void in
                        try connection.query(
                            "UPDATE node_commands SET done_at = rsup_now_ms(), result = $2 WHERE id = $1",
                            [String(id), text], operation: "answer another node's command")
                        try connection.query(
                            "SELECT pg_notify($1, $2)", [ClusterMember.commandChannel(of: origin), "ans \(id)"],
                            operation: "wake the other node")
                    }
                } catch {
                    throw PostgresStoreEngine.storeError(error, location: "cluster")
                }
            }
        } catch {
            // The asking node times out and tells its caller; the command itself was carried out or refused here.
        }
    }

    /// The node holding the device on `code`, read from the database (leases not run out).
    public func holder(of code: String) async throws(SupporterNodeError) -> RemotePresence? {
        let me = member.nodeID
        do throws(StoreError) {
            return try await engine.perform("find the node holding a device") {
                (connection: PostgresConnection) throws(StoreError) -> RemotePresence? in
                try ClusterListener.presence(connection, except: me, only: code, location: "cluster")[code]
            }
        } catch {
            throw SupporterNodeError(store: error)
        }
    }
}

extension ClusterPeers {
    /// Reads the presence row of `code` (by the database's clock).
    public func holding(of code: String) async throws(SupporterNodeError) -> ClusterHolding {
        let me = member.nodeID
        do throws(StoreError) {
            return try await engine.perform("find the session to resume") {
                (connection: PostgresConnection) throws(StoreError) -> ClusterHolding in
                let rows = try PostgresStoreTransaction(connection, location: "cluster").run(
                    "SELECT node_id, lease_until - rsup_now_ms() AS remaining, resume FROM device_presence WHERE code = $1",
                    [code], "find the session to resume")
                guard rows.count == 1, let node = rows[0, "node_id"], node != me,
                    let remaining = rows[0, "remaining"].flatMap({ Int64($0) })
                else { return .nobody }
                if remaining >= 0 { return .held(node: node, remaining: .milliseconds(remaining)) }
                return .lapsed(node: node, rows[0, "resume"].flatMap(StoredResumeState.decode))
            }
        } catch {
            throw SupporterNodeError(store: error)
        }
    }
}
