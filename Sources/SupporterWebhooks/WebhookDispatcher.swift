import Foundation
public import SupporterModel
public import SupportRuntime
public import SupportUtilities
import Synchronization
import SupportHTTP
public import SupportMetrics

/// Delivers a node's share of the webhook outbox. Glue: it decides nothing itself — the store says what is due and
/// who holds an endpoint, ``WebhookRetrySchedule`` says when to try again — and carries it out.
///
/// On its loop, every ``WebhookSettings/pollInterval`` (and at once after a busy round), it asks a thread of its own to
/// lease due endpoints from the ``WebhookOutbox``, up to the free sender slots (``WebhookSettings/concurrency``). Each
/// leased endpoint gets a sender thread, which POSTs its deliveries in order, records each attempt (extending the
/// lease) and stops at the first failure. So a hanging or flooding receiver holds one sender for at most
/// ``WebhookSettings/timeout`` per attempt and a bounded read, never an event loop, the store's writer or another
/// endpoint's deliveries. A delivery is recorded after its answer: a node that dies in between delivers it again
/// (at least once, with the same event id), as does another node once the lease lapses.
public final class WebhookDispatcher: @unchecked Sendable {
    // @unchecked: `inFlight`, `sendingTo`, `claiming`, `timer`, `stopped` and `lastPrune` are read and written only on
    // `loop` (each use is in a function that begins with `loop.preconditionInLoop()`, or in a closure `loop` runs);
    // everything else is immutable and Sendable, or Atomic / Mutex.
    private let settings: WebhookSettings
    private let outbox: any WebhookOutbox
    private let owner: String
    private let clock: any NodeClock
    private let loop: EventLoop
    private let tls: TLSContext
    private let payload: @Sendable (AuditEvent, StoredSessionContent?) -> [UInt8]
    private let log: @Sendable (String) -> Void
    private let userAgent: String

    private var inFlight = 0
    /// The endpoints a sender thread of this node delivers to now.
    private var sendingTo: Set<String> = []
    private var claiming = false
    private var stopped = false
    private var timer: LoopTimer?
    private var lastPrune: Date?
    private let sending = Atomic<Int>(0)

    /// - Parameters:
    ///   - owner: this node's name in the endpoints' leases (its cluster id, or host and process).
    ///   - payload: the JSON body of an event (the REST API's event object).
    ///   - log: where failures of the outbox itself go (one line each; a receiver's failures go to its delivery log).
    public init(
        settings: WebhookSettings, outbox: any WebhookOutbox, owner: String, clock: any NodeClock, loop: EventLoop,
        userAgent: String, payload: @escaping @Sendable (AuditEvent, StoredSessionContent?) -> [UInt8],
        log: @escaping @Sendable (String) -> Void
    ) throws(TransportError) {
        self.settings = settings
        self.outbox = outbox
        self.owner = owner
        self.clock = clock
        self.loop = loop
        self.payload = payload
        self.log = log
        self.userAgent = userAgent
        // TLS 1.2 too: helpdesks and chat tools still run it; the chain and host name are verified as ever.
        var configuration = HTTPClient.makeTLSConfiguration(trustRoots: settings.trustRoots)
        configuration.minimumVersion = .tls12
        configuration.handshakeTimeout = settings.timeout
        tls = try TLSContext(configuration)
    }

    /// Starts looking for due deliveries, after ending the leases this owner held before (a restart of the same node:
    /// what it was delivering when it stopped is taken up at once, not when those leases run out).
    public func start() {
        let (outbox, owner, log) = (outbox, owner, log)
        Self.thread("rsup-webhooks") { [self] in
            do throws(SupporterNodeError) { try outbox.releaseWebhookLease(endpointID: nil, owner: owner) } catch {
                log("webhooks: cannot release this node's earlier leases (they run out by themselves): \(error)")
            }
            self.loop.execute { self.schedule(after: .zero) }
        }
    }

    /// How long a lease lasts: long enough for an attempt at its time limit, recorded, with room to spare.
    private var leaseDuration: Duration { max(settings.lease, settings.timeout * 3) }

    /// Stops looking for due deliveries. Attempts under way go on on their threads (each within
    /// ``WebhookSettings/timeout``); one the process's exit cuts short is sent again later (at least once).
    public func stop() {
        loop.execute { [self] in
            self.stopped = true
            self.timer?.cancel()
            self.timer = nil
        }
    }

    /// Deliveries being sent now.
    public var sendingCount: Int { sending.load(ordering: .relaxed) }

    /// Checks that `settings`' trust roots load (a missing or unreadable `--webhook-trust` file), before anything starts.
    public static func check(_ settings: WebhookSettings) throws(TransportError) {
        _ = try TLSContext(HTTPClient.makeTLSConfiguration(trustRoots: settings.trustRoots))
    }

    /// Adds the dispatcher's families to `metrics`: attempts by result, and the deliveries being sent now.
    public func register(in metrics: MetricsRegistry) {
        let family = metrics.counters(
            "rsup_webhook_attempts_total", "Webhook delivery attempts, by result: delivered (2xx), retry, failed (given up)",
            labels: ["result"])
        attempts.withLock { $0 = ["delivered": family.counter("delivered"), "retry": family.counter("retry"), "failed": family.counter("failed")] }
        metrics.gauge("rsup_webhook_sending", "Webhook deliveries being sent now") { [weak self] in
            Double(self?.sendingCount ?? 0)
        }
    }

    private let attempts = Mutex<[String: MetricCounter]>([:])

    private func count(_ outcome: WebhookAttempt.Outcome) {
        let name: String
        switch outcome {
        case .delivered: name = "delivered"
        case .retry: name = "retry"
        case .failed: name = "failed"
        }
        attempts.withLock { $0[name] }?.increment()
    }

    private func schedule(after delay: Duration) {
        loop.preconditionInLoop()
        guard !stopped else { return }
        timer?.cancel()
        timer = loop.schedule(at: loop.now + delay) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.poll()
        }
    }

    private func poll() {
        loop.preconditionInLoop()
        guard !stopped, !claiming else { return }
        let free = settings.concurrency - inFlight
        guard free > 0 else { return schedule(after: settings.pollInterval) }
        claiming = true
        let pollTime = clock.wallTime
        let pruneDue = lastPrune.map { pollTime.timeIntervalSince($0) >= 3600 } ?? true
        if pruneDue { lastPrune = pollTime }
        let (outbox, owner, batch, retention, log, clock) = (outbox, owner, settings.batch, settings.logRetention, log, clock)
        let lease = WebhookRetrySchedule.seconds(leaseDuration)
        Self.thread("rsup-webhooks") { [self] in
            var work: [WebhookWork] = []
            do throws(SupporterNodeError) {
                if pruneDue {
                    _ = try outbox.pruneWebhookDeliveries(
                        finishedBefore: pollTime.addingTimeInterval(-WebhookRetrySchedule.seconds(retention)))
                }
                // The time read after the prune, however long it took: a lease granted now runs its whole length.
                let now = clock.wallTime
                let leaseUntil = now.addingTimeInterval(lease)
                work = try outbox.claimWebhookWork(
                    owner: owner, now: now, leaseUntil: leaseUntil, maxEndpoints: free, maxDeliveries: batch)
            } catch {
                log("webhooks: cannot read the outbox: \(error)")
            }
            let claimed = work
            self.loop.execute { self.claimed(claimed, asked: free) }
        }
    }

    private func claimed(_ work: [WebhookWork], asked: Int) {
        loop.preconditionInLoop()
        claiming = false
        guard !stopped else {
            // Stopped while the claim ran: hand the leases back rather than start senders during the drain.
            let (outbox, owner) = (outbox, owner)
            Self.thread("rsup-webhooks") {
                for item in work { try? outbox.releaseWebhookLease(endpointID: item.endpoint.id, owner: owner) }
            }
            return
        }
        for item in work {
            // This node sends to it already (its lease lapsed during a slow attempt and came back to the same owner):
            // one sender per endpoint, or two would send the same events at once and out of order.
            guard !sendingTo.contains(item.endpoint.id) else { continue }
            sendingTo.insert(item.endpoint.id)
            inFlight += 1
            Self.thread("rsup-webhook") { [self] in
                self.deliver(item)
                self.loop.execute {
                    self.inFlight -= 1
                    self.sendingTo.remove(item.endpoint.id)
                    self.schedule(after: .zero)
                }
            }
        }
        // A full round may have left more due: look again at once; else at the next interval.
        schedule(after: work.count == asked ? .zero : settings.pollInterval)
    }

    /// Sends `work`'s deliveries in order on this (sender) thread, stopping at the first one not taken.
    private func deliver(_ work: WebhookWork) {
        let endpoint = work.endpoint
        guard let url = try? WebhookURL(endpoint.url, plainHTTPHosts: settings.plainHTTPHosts) else {
            // The operator withdrew plain HTTP for its host since: each delivery fails until the URL changes.
            return fail(work, because: "the endpoint's URL is no longer allowed (plain http:// to a host not allowed)")
        }
        for (index, item) in work.items.enumerated() {
            let isLast = index == work.items.count - 1
            let now = clock.wallTime
            guard let event = item.event else {
                let goesOn = record(
                    WebhookAttempt(
                        deliveryID: item.delivery.id, at: now, status: nil,
                        error: "the event was archived (audit retention) before it could be delivered",
                        outcome: .failed(staleBefore: .distantPast)), endpoint, last: isLast)
                guard goesOn else { return }
                continue
            }
            let body = payload(event, item.content)
            let timestamp = Int64(now.timeIntervalSince1970.rounded(.down))
            let headers: [(name: String, value: String)] = [
                ("User-Agent", userAgent),
                ("RemoteSupport-Event-Id", String(event.id)),
                ("RemoteSupport-Event-Kind", event.kind.rawValue),
                ("RemoteSupport-Delivery-Id", String(item.delivery.id)),
                ("RemoteSupport-Delivery-Attempt", String(item.delivery.attempts + 1)),
                (
                    "RemoteSupport-Signature",
                    WebhookSignature.header(timestamp: timestamp, body: body, secrets: endpoint.signingSecrets(at: now))
                ),
            ]
            sending.add(1, ordering: .relaxed)
            let result = WebhookPost.send(to: url, headers: headers, body: body, settings: settings, tls: tls)
            sending.subtract(1, ordering: .relaxed)
            let answeredAt = clock.wallTime
            let outcome: WebhookAttempt.Outcome =
                result.isDelivered ? .delivered : settings.retry.outcome(of: item.delivery, failedAt: answeredAt)
            let attempt = WebhookAttempt(
                deliveryID: item.delivery.id, at: answeredAt, status: result.status, error: result.error,
                outcome: outcome)
            guard record(attempt, endpoint, last: isLast || !result.isDelivered) else { return }
            guard result.isDelivered else { return }
        }
        if work.items.isEmpty { release(endpoint) }
    }

    /// The first delivery of `work` failed for a reason that is not the receiver's; it holds the rest back (in order)
    /// until it is tried again.
    private func fail(_ work: WebhookWork, because why: String) {
        guard let first = work.items.first else { return release(work.endpoint) }
        let now = clock.wallTime
        record(
            WebhookAttempt(
                deliveryID: first.delivery.id, at: now, status: nil, error: why,
                outcome: settings.retry.outcome(of: first.delivery, failedAt: now)), work.endpoint, last: true)
    }

    /// Records `attempt`, extending the lease unless it is the `last` of the lease. False when the sender must stop:
    /// the lease is no longer this node's, or the endpoint changed (disabled, deleted, another URL or secret: the rest
    /// of the batch waits for a lease taken with the endpoint as it is now), or the outbox failed (the lease then
    /// lapses, and the delivery is sent again: at least once).
    @discardableResult
    private func record(_ attempt: WebhookAttempt, _ endpoint: WebhookEndpoint, last: Bool) -> Bool {
        let leaseUntil = last ? nil : clock.wallTime.addingTimeInterval(WebhookRetrySchedule.seconds(leaseDuration))
        count(attempt.outcome)
        do throws(SupporterNodeError) {
            return try outbox.recordWebhookAttempt(attempt, endpoint: endpoint, owner: owner, leaseUntil: leaseUntil)
        } catch {
            log("webhooks: cannot record delivery \(attempt.deliveryID) to endpoint \(endpoint.id): \(error)")
            return false
        }
    }

    private func release(_ endpoint: WebhookEndpoint) {
        do throws(SupporterNodeError) { try outbox.releaseWebhookLease(endpointID: endpoint.id, owner: owner) } catch {
            log("webhooks: cannot release endpoint \(endpoint.id): \(error)")
        }
    }

    private static func thread(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.name = name
        thread.start()
    }
}
