public import Foundation
import SupportUtilities
public import SupporterModel

/// The REST API's bearer-token check and its defence against token guessing (SPEC §13): a value, in the style of the
/// code registry; time is an input, nothing is read inside.
///
/// - A valid admin token is accepted first, always: failures from its address never refuse it (carrier-grade NAT and
///   shared proxies put honest admins behind the addresses of guessers).
/// - Otherwise a client address that guessed too often is refused with 429 and `Retry-After`.
/// - Unknown bearer tokens are failures: they count against the client address under the node's one back-off type
///   (``BackoffPolicy``: ``Policy/backoff``). A missing token (or another scheme) is 401 and a device token 403;
///   neither is a guess, so neither counts.
/// - Every unknown token (answered 401 or 429) is audited, bounded by an ``AuditThrottle``: one row per address per
///   window, the rest counted and written as one aggregate row per address when its window closes (``tick(now:)``).
///
/// Bounded: at most ``Policy/addresses`` addresses are tracked for back-off and the throttle's own bound for audit.
public struct AuthenticationGuard: Sendable {
    /// The numbers (SPEC §13).
    public struct Policy: Sendable, Hashable {
        /// Unknown tokens per client address: 5 free, then blocked 1 s, doubling per further failure up to 300 s;
        /// one failure forgiven per 60 s without one.
        public var backoff = BackoffPolicy(
            freeFailures: 5, base: .seconds(1), maximum: .seconds(300), decayInterval: .seconds(60))
        /// Client addresses tracked for back-off (the oldest are dropped beyond it).
        public var addresses = 10_000
        /// Audit rows of failures: one per address per 60 s, at most 600 per 60 s in all, 10 000 addresses tracked.
        public var audit = AuditThrottle.Policy(window: .seconds(60), globalLimit: 600, keys: 10_000)

        public init() {}
    }

    /// What the request's `Authorization` field holds, once the token is looked up.
    public enum Credential: Sendable, Hashable {
        /// No `Authorization: Bearer …` field.
        case missing
        /// A bearer token the node does not know.
        case unknown
        /// A device token: valid, but not for the REST API.
        case device
        /// An admin token, named by its public id.
        case admin(tokenID: String)
    }

    /// What to do with the request.
    public enum Decision: Sendable, Hashable {
        /// Serve it, as this token.
        case accept(tokenID: String)
        /// Answer with `error`; first make `audit` durable, when there is one.
        case refuse(RESTError, audit: AuditEvent?)
    }

    public let policy: Policy
    private var backoff: BackoffTable
    private var throttle: AuditThrottle

    public init(policy: Policy = Policy()) {
        self.policy = policy
        backoff = BackoffTable(policy: policy.backoff, capacity: policy.addresses)
        throttle = AuditThrottle(policy: policy.audit)
    }

    /// The bearer token of an `Authorization` field value (`Bearer <token>`, scheme in any case), or nil.
    public static func bearerToken(_ authorization: String?) -> String? {
        guard let authorization else { return nil }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// Decides about a request from `address` carrying `credential`.
    /// `address` counts by its key (``IPAddressText/sourceKey(_:)``: an IPv6 client's whole /64, SPEC §13.1).
    public mutating func check(_ credential: Credential, address: String, now: Date) -> Decision {
        // The token first: a valid admin token is never refused for its address's failures.
        if case .admin(let id) = credential { return .accept(tokenID: id) }
        let address = IPAddressText.sourceKey(address)
        let clock = Self.clock(now)
        let blocked = backoff.retryAfter(address, now: clock).map { wait in
            RESTError(
                .tooManyRequests, "too many unknown bearer tokens from \(address); retry in \(RESTError.seconds(wait)) s",
                retryAfter: wait)
        }
        switch credential {
        case .admin(let id):
            return .accept(tokenID: id)
        case .missing:
            return .refuse(
                blocked ?? RESTError(.unauthorized, "missing bearer token: send 'Authorization: Bearer <admin token>'"),
                audit: nil)
        case .device:
            return .refuse(
                blocked ?? RESTError(.forbidden, "this is a device token; the REST API needs an admin token"),
                audit: nil)
        case .unknown:
            // A guess while blocked is refused without counting (the block does not grow), but it is audited.
            if blocked == nil { backoff.recordFailure(address, now: clock) }
            var row: AuditEvent?
            if throttle.admit(address, now: clock) {
                row = AuditEvent(
                    time: now, kind: .error,
                    details: [
                        "what": "rest_authentication_failed", "reason": "unknown_token", "source_address": address,
                    ])
            }
            return .refuse(blocked ?? RESTError(.unauthorized, "unknown bearer token"), audit: row)
        }
    }

    /// Time passed: the aggregate rows of audit windows that closed (``AuditEvent/Kind/error`` with `what`
    /// `rest_authentication_failures_suppressed`, `source_address` (`*` for the global aggregate), `count`, `since`);
    /// decayed back-off is forgotten. With `everything` (at shutdown) every open window closes now.
    public mutating func tick(now: Date, everything: Bool = false) -> [AuditEvent] {
        let clock = Self.clock(now)
        backoff.forgetDecayed(now: clock)
        return throttle.flush(now: clock, everything: everything).map { suppressed in
            AuditEvent(
                time: now, kind: .error,
                details: [
                    "what": "rest_authentication_failures_suppressed", "source_address": suppressed.key ?? "*",
                    "count": "\(suppressed.count)", "since": "\(Self.date(suppressed.since).unixMilliseconds)",
                ])
        }
    }

    /// Unknown tokens from `address` still counted at `now`.
    public func failures(_ address: String, now: Date) -> Int { backoff.failures(address, now: Self.clock(now)) }

    /// Wall-clock time since 1970, as the registry's back-off uses.
    static func clock(_ date: Date) -> Duration { .milliseconds(date.unixMilliseconds) }

    static func date(_ clock: Duration) -> Date {
        let (seconds, attoseconds) = clock.components
        return Date(unixMilliseconds: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
