public import Foundation
public import SupporterModel

/// When a delivery that was not answered with 2xx is tried again: after `base`, then twice as long each time up to
/// `cap` (5 s, 10 s, 20 s, … 1 h by default), until `window` (24 h) has passed since its event; then it is given up,
/// with every delivery of its endpoint made before the window began. Pure: the time is an input.
public struct WebhookRetrySchedule: Sendable, Hashable {
    public var base: Duration
    public var cap: Duration
    public var window: Duration

    public init(base: Duration = .seconds(5), cap: Duration = .seconds(3600), window: Duration = .seconds(86_400)) {
        self.base = base
        self.cap = cap
        self.window = window
    }

    /// The wait after the `attempts`-th failed attempt (1 for the first).
    public func delay(afterAttempts attempts: Int) -> Duration {
        var delay = base
        for _ in 1..<max(1, min(attempts, 40)) {
            delay = delay * 2
            if delay >= cap { return cap }
        }
        return min(delay, cap)
    }

    /// What a failed attempt at `now` means for `delivery`, whose `attempts` do not yet count this one.
    public func outcome(of delivery: WebhookDelivery, failedAt now: Date) -> WebhookAttempt.Outcome {
        let next = now.addingTimeInterval(Self.seconds(delay(afterAttempts: delivery.attempts + 1)))
        let end = delivery.createdAt.addingTimeInterval(Self.seconds(window))
        guard next < end else { return .failed(staleBefore: now.addingTimeInterval(-Self.seconds(window))) }
        return .retry(at: next)
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
