import Synchronization

public import SupporterCore
public import SupporterStore
public import SupportUtilities
public import SupporterModel

/// A cluster bus that fails on command, wrapping a real one (the PostgreSQL engine's `ClusterPeers` of a test's
/// node): while a fault in ``faults`` is set, that part of the route from a supporter's node to the node holding the
/// device fails; everything else goes through to the real bus. With ``FailingStoreEngine`` the proof of the audit
/// rule for cluster commands: a routed connect, cancel or end that fails on its way is a typed error at its origin
/// and happens nowhere, and one that is carried out is what every node and the store say.
public final class FailingClusterBus: ClusterBus {
    /// Where the route fails.
    public struct Faults: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Sending a command throws ``injected`` before anything is written, as when the database cannot be reached.
        public static let send = Faults(rawValue: 1 << 0)
        /// Asking the database which node holds a device (``ClusterBus/holder(of:)``) throws ``injected``.
        public static let holderLookup = Faults(rawValue: 1 << 1)
        /// Commands sent to this node never reach it (their notification is lost): it neither carries them out nor
        /// answers, and the sender's wait runs out.
        public static let incomingCommands = Faults(rawValue: 1 << 2)
        /// This node carries out the commands it takes, but its answers are lost on the way back: the sender's wait
        /// runs out.
        public static let outgoingAnswers = Faults(rawValue: 1 << 3)

        public var description: String {
            let names: [(Faults, String)] = [
                (.send, "send"), (.holderLookup, "holder lookup"), (.incomingCommands, "incoming commands"),
                (.outgoingAnswers, "outgoing answers"),
            ]
            let set = names.filter { contains($0.0) }.map(\.1)
            return set.isEmpty ? "none" : set.joined(separator: ", ")
        }
    }

    /// What the faults did so far.
    public struct Counts: Sendable, Equatable {
        public var sendsFailed = 0
        public var lookupsFailed = 0
        public var commandsDropped = 0
        public var answersDropped = 0
    }

    public let base: any ClusterBus
    private let state = Mutex<(faults: Faults, counts: Counts)>(([], Counts()))

    /// The error a failed send or lookup throws: the store's, as the real bus reports a database it cannot reach.
    public static let injected = SupporterNodeError(
        store: StoreError(
            kind: .io, operation: "reach the other nodes",
            message: "the database cannot be reached (a test's injected failure)", path: "cluster"))

    public init(wrapping base: any ClusterBus) { self.base = base }

    /// The faults in effect from now on (none at first).
    public var faults: Faults {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }

    /// What the faults did so far.
    public var counts: Counts { state.withLock { $0.counts } }

    /// Whether `fault` is in effect; if so, counts it in `count`.
    private func hit(_ fault: Faults, _ count: WritableKeyPath<Counts, Int>) -> Bool {
        state.withLock { state in
            guard state.faults.contains(fault) else { return false }
            state.counts[keyPath: count] += 1
            return true
        }
    }

    public var nodeID: String { base.nodeID }
    public var presenceLease: Duration { base.presenceLease }

    public func start(
        logger: NodeLogger, timeout: Duration, deliver: @escaping @Sendable (ClusterNews) -> Void
    ) -> Bool {
        base.start(logger: logger, timeout: timeout) { [weak self] news in
            if case .command = news, let self, self.hit(.incomingCommands, \.commandsDropped) { return }
            deliver(news)
        }
    }

    public func stop() { base.stop() }

    public var isListening: Bool { base.isListening }

    public var metrics: ClusterMetrics { base.metrics }

    public func watchPresence(_ watch: PresenceWatch) { base.watchPresence(watch) }

    public func send(_ command: ClusterCommand, to node: String, timeout: Duration) async throws(SupporterNodeError)
        -> ClusterCommandAnswer
    {
        if hit(.send, \.sendsFailed) { throw Self.injected }
        return try await base.send(command, to: node, timeout: timeout)
    }

    public func take(_ id: Int64, _ command: ClusterCommand) async -> Bool { await base.take(id, command) }

    public func answer(_ id: Int64, to origin: String, _ answer: ClusterCommandAnswer) async {
        if hit(.outgoingAnswers, \.answersDropped) { return }
        await base.answer(id, to: origin, answer)
    }

    public func answered(_ id: Int64, _ answer: ClusterCommandAnswer, onlyIfWaiting: Bool) {
        base.answered(id, answer, onlyIfWaiting: onlyIfWaiting)
    }

    public func holder(of code: String) async throws(SupporterNodeError) -> RemotePresence? {
        if hit(.holderLookup, \.lookupsFailed) { throw Self.injected }
        return try await base.holder(of: code)
    }

    public func holding(of code: String) async throws(SupporterNodeError) -> ClusterHolding {
        try await base.holding(of: code)
    }
}
