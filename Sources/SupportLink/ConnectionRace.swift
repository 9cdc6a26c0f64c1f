import Synchronization
import SupportWire
import SupportRuntime
import SupportUtilities

/// Happy Eyeballs (RFC 8305) for a node's addresses: attempts start one after another, ``attemptDelay`` apart or at
/// once when the previous one failed, and run side by side; the first link to open wins and the others are closed
/// when they finish. So one black-holed address (an IPv6 route that drops packets, a node that died) costs a quarter
/// of a second, not a connect timeout.
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
        let result: Result<FramedLink, TransportError> = await withCheckedContinuation { continuation in
            state.mutex.withLock { $0.continuation = continuation }
            start(order, state: state, attemptDelay: attemptDelay, attempt: attempt)
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
        Task {
            let outcome: Result<FramedLink, TransportError>
            do throws(TransportError) { outcome = .success(try await attempt(address, claim)) } catch {
                outcome = .failure(error)
            }
            finished(index, outcome, order, state: state, attemptDelay: attemptDelay, attempt: attempt)
        }
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
        enum Next { case resume(CheckedContinuation<Result<FramedLink, TransportError>, Never>, Result<FramedLink, TransportError>), closeLoser(FramedLink), startNext, nothing }
        let next = state.mutex.withLock { state -> Next in
            state.running -= 1
            switch outcome {
            case .success(let link):
                if state.winner == nil { state.winner = index }  // an attempt that never claimed
                guard state.winner == index, !state.finished, let continuation = state.continuation else {
                    return .closeLoser(link)
                }
                state.finished = true
                state.continuation = nil
                return .resume(continuation, outcome)
            case .failure(let error):
                guard !state.finished, state.winner == nil || state.winner == index else { return .nothing }
                state.lastError = error
                let reachability: [TransportError.Kind] = [.connectionRefused, .hostUnreachable, .connectTimeout]
                let exhausted = state.next >= order.count && state.running == 0
                if !reachability.contains(error.kind) || exhausted, let continuation = state.continuation {
                    state.finished = true
                    state.continuation = nil
                    return .resume(continuation, .failure(error))
                }
                return state.next < order.count ? .startNext : .nothing
            }
        }
        switch next {
        case .resume(let continuation, let result): continuation.resume(returning: result)
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
