import Synchronization
import SupportHTTP
import SupportRuntime
import SupportUtilities
import SupporterModel

/// `GET /livez` and `GET /readyz`: the probes of a service manager, a load balancer or Kubernetes. Open to anyone
/// (a probe carries no credential), so they answer a status word and code only; why a node is not ready goes to its
/// log. Each waits at most ``RESTRouter/probeTimeout`` for the node, on a timer of the API's own loop.
extension RESTRouter {
    /// How long a probe waits for the node's loops or its store before it answers 503.
    static let probeTimeout: Duration = .seconds(2)

    /// 200 `ok` once every event loop of the node has run a turn; 503 `not live` when one has not within the probe's
    /// time (stuck in a callback).
    func liveness(_ call: RESTCall) async -> HTTPResponse {
        let node = self.node
        let alive = await probe(default: false) { done in node.whenLoopsRespond { done(true) } }
        return alive ? .text(.ok, "ok\n") : .text(.serviceUnavailable, "not live\n")
    }

    /// 200 `ready` when the node listens for devices, is not draining, its store answered a read and (several nodes)
    /// its cluster listener is connected; 503 `not ready` otherwise, with the reasons in the log.
    func readiness(_ call: RESTCall) async -> HTTPResponse {
        let node = self.node
        let health = await probe(default: nil) { done in node.checkReadiness { done($0) } }
        guard let health, health.isReady else {
            let problems = health?.problems ?? ["the node did not answer within \(Self.probeTimeout)"]
            logger.log(.info, "readiness probe: not ready: \(problems.joined(separator: "; "))")
            return .text(.serviceUnavailable, "not ready\n")
        }
        return .text(.ok, "ready\n")
    }

    /// Starts `check`, and answers with what it reports or with `fallback` after ``probeTimeout``, whichever first.
    private func probe<Value: Sendable>(
        default fallback: Value, _ check: (@escaping @Sendable (Value) -> Void) -> Void
    ) async -> Value {
        let loop = probeLoop
        return await withCheckedContinuation { continuation in
            let answer = ProbeAnswer(continuation)
            let timer = LoopBound<LoopTimer?>(handingOver: nil, to: loop)
            let armed = loop.execute {
                timer.value = loop.schedule(at: loop.now + Self.probeTimeout) { answer.resume(fallback) }
            }
            // Runs after the arming (the loop runs its work in order), so the timer it cancels exists.
            answer.onResume {
                loop.execute {
                    timer.value?.cancel()
                    timer.value = nil
                }
            }
            if !armed { answer.resume(fallback) }
            check { answer.resume($0) }
        }
    }
}

/// The one answer of a probe: the check's or the timer's, whichever comes first (from any thread).
private final class ProbeAnswer<Value: Sendable>: Sendable {
    private let state: Mutex<(continuation: CheckedContinuation<Value, Never>?, cleanup: (@Sendable () -> Void)?)>

    init(_ continuation: CheckedContinuation<Value, Never>) { state = Mutex((continuation, nil)) }

    /// What to do once answered (cancel the timer); at once if answered already.
    func onResume(_ cleanup: @escaping @Sendable () -> Void) {
        let answered = state.withLock { state -> Bool in
            guard state.continuation != nil else { return true }
            state.cleanup = cleanup
            return false
        }
        if answered { cleanup() }
    }

    func resume(_ value: Value) {
        let (continuation, cleanup) = state.withLock { state in
            defer { state = (nil, nil) }
            return state
        }
        continuation?.resume(returning: value)
        cleanup?()
    }
}
