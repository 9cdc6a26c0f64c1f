import Synchronization
import SupportWire
package import SupportRuntime
import SupportUtilities

/// Happy Eyeballs (RFC 8305) for a node's addresses: attempts start one after another, ``attemptDelay`` apart or at
/// once when the previous one failed, and run side by side; the first link to open wins and the others are cancelled
/// (their sockets closed at once). So one black-holed address (an IPv6 route that drops packets, a node that died)
/// costs a quarter of a second, not a connect timeout. Cancelling the caller's task cancels every attempt and throws
/// `cancelled`.
///
/// Nothing blocks: attempts are tasks awaiting their loop, the stagger is a `Task.sleep`, and the name lookup before
/// (``NameResolver``) runs on the resolver's own threads.
package enum ConnectionRace {
    /// RFC 8305 §5's recommended "Connection Attempt Delay".
    package static let attemptDelay: Duration = .milliseconds(250)

    /// The order attempts start in (RFC 8305 §4): the resolver's first address, then the families alternating, each
    /// family's addresses keeping the resolver's order (RFC 6724 preference).
    package static func ordered(_ addresses: [SocketAddress]) -> [SocketAddress] {
        guard let first = addresses.first else { return [] }
        var preferred = addresses.filter { $0.family == first.family }
        var other = addresses.filter { $0.family != first.family }
        var ordered: [SocketAddress] = []
        while !preferred.isEmpty || !other.isEmpty {
            if !preferred.isEmpty { ordered.append(preferred.removeFirst()) }
            if !other.isEmpty { ordered.append(other.removeFirst()) }
        }
        return ordered
    }

    /// Tells an attempt whether its link, now open, is the one the race keeps (true once, for the first to ask).
    package typealias Claim = @Sendable () -> Bool

    /// The race's shared state, in a class so that attempts and timers can share it.
    private final class Race: Sendable {
        let mutex = Mutex(State())
    }

    private struct State {
        var next = 0
        var running = 0
        var finished = false
        /// The attempt whose link opened first.
        var winner: Int?
        var lastError: TransportError?
        var continuation: CheckedContinuation<Result<FramedLink, TransportError>, Never>?
        /// Attempts still running, by index: cancelled (their dials closed at once) when the race is decided.
        var attempts: [Int: Task<Void, Never>] = [:]
        /// Attempts that finished (their tasks need no cancelling).
        var done: Set<Int> = []
        /// The caller's task was cancelled before the race began.
        var cancelled = false

        /// Ends the race: the attempts still running are handed back, to be cancelled.
        mutating func finish() -> [Task<Void, Never>] {
            finished = true
            continuation = nil
            defer { attempts = [:] }
            return Array(attempts.values)
        }
    }

    /// Races `attempt` over `addresses` (in ``ordered(_:)`` order). An error that says nothing about reaching the
    /// node (a certificate or pin refused, a protocol error) ends the race at once: another address of the same node
    /// would say the same.
    ///
    /// `attempt` opens a link to an address; it calls its ``Claim`` when that link opens (before telling anyone), and
    /// tells its delegate only when the claim is granted: a losing link is closed without a word to the caller's
    /// delegate.
    package static func run(
        _ addresses: [SocketAddress], attemptDelay: Duration = ConnectionRace.attemptDelay,
        attempt: @escaping Attempt
    ) async throws(TransportError) -> FramedLink {
        let order = ordered(addresses)
        guard !order.isEmpty else { throw TransportError(.nameResolution, "no address to connect to") }
        let state = Race()
        let result: Result<FramedLink, TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let cancelled = state.mutex.withLock { state -> Bool in
                    guard !state.cancelled else { return true }
                    state.continuation = continuation
                    return false
                }
                if cancelled {
                    continuation.resume(returning: .failure(TransportError(.cancelled, "the dial was cancelled")))
                    return
                }
                start(order, state: state, attemptDelay: attemptDelay, attempt: attempt)
            }
        } onCancel: {
            // The caller gave up: every attempt stops now, and the caller hears `cancelled`.
            let (continuation, losers) = state.mutex.withLock {
                state -> (CheckedContinuation<Result<FramedLink, TransportError>, Never>?, [Task<Void, Never>]) in
                state.cancelled = true
                guard !state.finished else { return (nil, []) }
                let continuation = state.continuation
                return (continuation, state.finish())
            }
            for task in losers { task.cancel() }
            continuation?.resume(returning: .failure(TransportError(.cancelled, "the dial was cancelled")))
        }
        return try result.get()
    }

    package typealias Attempt = @Sendable (SocketAddress, @escaping Claim) async throws(TransportError) -> FramedLink

    private static func start(
        _ order: [SocketAddress], state: Race, attemptDelay: Duration, attempt: @escaping Attempt
    ) {
        let index = state.mutex.withLock { state -> Int? in
            guard !state.finished, state.next < order.count else { return nil }
            state.next += 1
            state.running += 1
            return state.next - 1
        }
        guard let index else { return }
        let address = order[index]
        let claim: Claim = {
            state.mutex.withLock { state in
                guard state.winner == nil, !state.finished else { return state.winner == index }
                state.winner = index
                return true
            }
        }
        let task = Task {
            let outcome: Result<FramedLink, TransportError>
            do throws(TransportError) { outcome = .success(try await attempt(address, claim)) } catch {
                outcome = .failure(error)
            }
            finished(index, outcome, order, state: state, attemptDelay: attemptDelay, attempt: attempt)
        }
        // Kept while it runs, so that a decided race can cancel it (a task already finished is not kept).
        let decided = state.mutex.withLock { state -> Bool in
            guard !state.finished else { return true }
            if !state.done.contains(index) { state.attempts[index] = task }
            return false
        }
        if decided { task.cancel() }
        if index + 1 < order.count {
            Task {
                try? await Task.sleep(for: attemptDelay)
                // Still nobody through, and this attempt has not already been followed by a failure's: the next one.
                let due = state.mutex.withLock { !$0.finished && $0.winner == nil && $0.next == index + 1 }
                if due { start(order, state: state, attemptDelay: attemptDelay, attempt: attempt) }
            }
        }
    }

    private static func finished(
        _ index: Int, _ outcome: Result<FramedLink, TransportError>, _ order: [SocketAddress], state: Race,
        attemptDelay: Duration, attempt: @escaping Attempt
    ) {
        typealias Continuation = CheckedContinuation<Result<FramedLink, TransportError>, Never>
        enum Next {
            case resume(Continuation, Result<FramedLink, TransportError>, losers: [Task<Void, Never>])
            case closeLoser(FramedLink)
            case startNext
            case nothing
        }
        let next = state.mutex.withLock { state -> Next in
            state.running -= 1
            state.attempts[index] = nil
            state.done.insert(index)
            switch outcome {
            case .success(let link):
                if state.winner == nil { state.winner = index }  // an attempt that never claimed
                guard state.winner == index, !state.finished, let continuation = state.continuation else {
                    return .closeLoser(link)
                }
                return .resume(continuation, outcome, losers: state.finish())
            case .failure(let error):
                guard !state.finished, state.winner == nil || state.winner == index else { return .nothing }
                state.lastError = error
                let reachability: [TransportError.Kind] = [.connectionRefused, .hostUnreachable, .connectTimeout, .handshakeTimeout]
                let exhausted = state.next >= order.count && state.running == 0
                if !reachability.contains(error.kind) || exhausted, let continuation = state.continuation {
                    return .resume(continuation, .failure(error), losers: state.finish())
                }
                return state.next < order.count ? .startNext : .nothing
            }
        }
        switch next {
        case .resume(let continuation, let result, let losers):
            // The race is decided: the attempts still dialling stop now rather than at their deadlines.
            for task in losers { task.cancel() }
            continuation.resume(returning: result)
        case .closeLoser(let link): link.close(reason: .normalClose)
        case .startNext: start(order, state: state, attemptDelay: attemptDelay, attempt: attempt)
        case .nothing: break
        }
    }
}

/// The delegate of one attempt's link until it opens: the first link to open takes the caller's delegate (and tells
/// it `linkDidOpen`); a later one stays silent and is closed by the race.
final class ConnectionRaceGate: FramedLinkDelegate, @unchecked Sendable {
    // @unchecked: `target` is set once in init and only read; the callbacks run on the link's loop.
    private weak var target: FramedLinkDelegate?
    private let claim: ConnectionRace.Claim

    init(target: FramedLinkDelegate?, claim: @escaping ConnectionRace.Claim) {
        self.target = target
        self.claim = claim
    }

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) {
        guard claim() else { return }
        link.delegate = target
        target?.linkDidOpen(link, parameters: parameters)
    }

    func link(_ link: FramedLink, didReceive message: Message) {}
    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) {}
}
