import Synchronization

/// Runs the changes of one key (a code, the accounts) one after another, each from its decision to its answer.
///
/// The node's one audit rule is decide → commit → apply → answer: memory changes only after the store committed.
/// A second change of the same thing decided while the first is still committing would be decided on the state
/// before the first; so changes of one key wait for each other here, in arrival order, and changes of different keys
/// run at once. Nothing here runs on an event loop (callers are tasks: the CLI's control commands, the REST handlers).
///
/// Bounded: at most ``waitingLimit`` changes wait per key; a further one is refused at once (nil) rather than queued.
final class ChangeLanes: Sendable {
    /// How many changes may wait behind the running one, per key.
    static let waitingLimit = 64

    private struct Lane {
        /// The continuations of the changes waiting, oldest first.
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private enum Entry { case running, mustWait, full }

    /// Keys with a change running; a key without a running change has no entry.
    private let lanes = Mutex<[String: Lane]>([:])

    /// Runs `body` once every earlier change of `key` has finished; nil without running it when
    /// ``waitingLimit`` changes of `key` wait already.
    func run<Result: Sendable, Failure: Error>(
        _ key: String, _ body: () async throws(Failure) -> Result
    ) async throws(Failure) -> Result? {
        let entry = lanes.withLock { lanes -> Entry in
            guard let lane = lanes[key] else {
                lanes[key] = Lane()
                return .running
            }
            return lane.waiting.count < Self.waitingLimit ? .mustWait : .full
        }
        switch entry {
        case .full:
            return nil
        case .mustWait:
            await withCheckedContinuation { continuation in
                // Appended under the lock that `finish` takes to hand the lane on, so no wake-up is lost; the count
                // may have reached the limit meanwhile by at most the callers racing here, which is still bounded
                // (each of them holds one task).
                lanes.withLock { lanes in
                    if lanes[key] == nil {
                        // The running change finished between the check and here: this one runs now.
                        lanes[key] = Lane()
                        continuation.resume()
                    } else {
                        lanes[key]!.waiting.append(continuation)
                    }
                }
            }
        case .running:
            break
        }
        defer { finish(key) }
        return try await body()
    }

    /// Hands `key`'s lane to its oldest waiting change, or closes the lane.
    private func finish(_ key: String) {
        let next = lanes.withLock { lanes -> CheckedContinuation<Void, Never>? in
            guard var lane = lanes[key], !lane.waiting.isEmpty else {
                lanes[key] = nil
                return nil
            }
            let next = lane.waiting.removeFirst()
            lanes[key] = lane
            return next
        }
        next?.resume()
    }
}
