public import Foundation
public import SupporterModel
import SupportUtilities

/// What an attempt writes to its delivery's row, the same in every engine.
public enum WebhookAttemptRow {
    /// The state, the next attempt and the finish time (Unix milliseconds), and the bound before which the endpoint's
    /// older pending deliveries are given up with it.
    public static func columns(of attempt: WebhookAttempt) -> (
        state: String, nextAttempt: Int64?, finished: Int64?, staleBefore: Date?
    ) {
        switch attempt.outcome {
        case .delivered: ("delivered", nil, attempt.at.unixMilliseconds, nil)
        case .retry(let at): ("pending", at.unixMilliseconds, nil, nil)
        case .failed(let staleBefore): ("failed", nil, attempt.at.unixMilliseconds, staleBefore)
        }
    }
}
