public import Foundation
import Testing

import SupporterCore
public import SupporterModel
public import SupporterStore

/// The webhook outbox's cases that hold for every store engine, written once: the trigger that makes deliveries in
/// each audit row's transaction, leases, retries, giving up, redelivery, endpoint changes and pruning. Each engine's
/// suite runs every ``Case`` on a fresh engine of its own, as the arguments of one parameterized test:
/// SessionStoreWebhooksTests (SupporterStoreSQLiteTests) on a new SQLite file, PostgresStoreEngineWebhooksTests
/// (SupporterStorePostgresTests) on a throwaway PostgreSQL cluster. A case needs nothing of its engine but the
/// `StoreEngine` protocol: its failing job is one no engine commits (an update of a code that does not exist). What
/// only some engines have (several nodes on one database) stays in that engine's suite, with the helpers here.
public enum WebhookStoreCases {
    /// One case; a new one is a case here, its function below and its line in ``run(on:)``, and then runs on every
    /// engine.
    public enum Case: CaseIterable, Sendable {
        case anAuditRowMakesAPendingDeliveryForEachEnabledEndpointThatWantsItsKind
        case aClaimLeasesDueEndpointsWithTheirOldestPendingDeliveriesInOrder
        case aRetriedDeliveryWaitsForItsNextAttempt
        case aRetryNowMakesTheBackedOffDeliveriesDue
        case aSenderGoesOnOnlyWhileItHoldsTheLeaseOfAnUnchangedEndpoint
        case aDeliveredAttemptFinishesTheDeliveryAndTheLeaseMovesOnlyForItsOwner
        case aGivenUpDeliveryGivesUpTheOlderBacklogOfItsEndpointOnly
        case aRedeliveryIsANewPendingDeliveryNamedByItsAuditRow
        case updatesAndDeletesChangeOnlyEndpointsThatExist
        case pruningDeletesOnlyDeliveriesFinishedBeforeTheBound

        /// Runs the case on `engine`, a fresh one that holds no endpoint, delivery or audit row yet.
        public func run(on engine: any StoreEngine) async throws {
            switch self {
            case .anAuditRowMakesAPendingDeliveryForEachEnabledEndpointThatWantsItsKind:
                try await WebhookStoreCases.anAuditRowMakesAPendingDeliveryForEachEnabledEndpointThatWantsItsKind(engine)
            case .aClaimLeasesDueEndpointsWithTheirOldestPendingDeliveriesInOrder:
                try await WebhookStoreCases.aClaimLeasesDueEndpointsWithTheirOldestPendingDeliveriesInOrder(engine)
            case .aRetriedDeliveryWaitsForItsNextAttempt:
                try await WebhookStoreCases.aRetriedDeliveryWaitsForItsNextAttempt(engine)
            case .aSenderGoesOnOnlyWhileItHoldsTheLeaseOfAnUnchangedEndpoint:
                try await WebhookStoreCases.aSenderGoesOnOnlyWhileItHoldsTheLeaseOfAnUnchangedEndpoint(engine)
            case .aRetryNowMakesTheBackedOffDeliveriesDue:
                try await WebhookStoreCases.aRetryNowMakesTheBackedOffDeliveriesDue(engine)
            case .aDeliveredAttemptFinishesTheDeliveryAndTheLeaseMovesOnlyForItsOwner:
                try await WebhookStoreCases.aDeliveredAttemptFinishesTheDeliveryAndTheLeaseMovesOnlyForItsOwner(engine)
            case .aGivenUpDeliveryGivesUpTheOlderBacklogOfItsEndpointOnly:
                try await WebhookStoreCases.aGivenUpDeliveryGivesUpTheOlderBacklogOfItsEndpointOnly(engine)
            case .aRedeliveryIsANewPendingDeliveryNamedByItsAuditRow:
                try await WebhookStoreCases.aRedeliveryIsANewPendingDeliveryNamedByItsAuditRow(engine)
            case .updatesAndDeletesChangeOnlyEndpointsThatExist:
                try await WebhookStoreCases.updatesAndDeletesChangeOnlyEndpointsThatExist(engine)
            case .pruningDeletesOnlyDeliveriesFinishedBeforeTheBound:
                try await WebhookStoreCases.pruningDeletesOnlyDeliveriesFinishedBeforeTheBound(engine)
            }
        }
    }

    // MARK: the cases

    static func anAuditRowMakesAPendingDeliveryForEachEnabledEndpointThatWantsItsKind(
        _ engine: any StoreEngine
    ) async throws {
        let every = Self.endpoint(1, ["*"])
        let sessions = Self.endpoint(2, ["session_started", "session_ended"])
        let disabled = Self.endpoint(3, ["*"], enabled: false)
        let parts = Self.endpoint(4, ["session", "started"])  // parts of a kind are not the kind
        let codes = Self.endpoint(5, ["code_created"])
        for endpoint in [every, sessions, disabled, parts, codes] { try Self.add(endpoint, to: engine) }

        let id = try await Self.audit(.sessionStarted, at: Self.at(1), details: ["device": "Pixel 8"], on: engine)
        func made(for endpoint: WebhookEndpoint) throws -> [WebhookDelivery] {
            try Self.deliveries(of: endpoint, on: engine).filter { $0.eventID == id }
        }
        let toEvery = try made(for: every)
        try #require(toEvery.count == 1)
        #expect(
            toEvery[0]
                == WebhookDelivery(
                    id: toEvery[0].id, endpointID: every.id, eventID: id, eventKind: "session_started",
                    code: "123456789", state: .pending, attempts: 0, createdAt: Self.at(1),
                    nextAttemptAt: Self.at(1)))
        #expect(try made(for: sessions).map(\.eventKind) == ["session_started"])
        #expect(try made(for: disabled).isEmpty, "a disabled endpoint gets no new deliveries")
        #expect(try made(for: parts).isEmpty, "a kind is matched whole")
        #expect(try made(for: codes).isEmpty, "an unlisted kind makes none")

        // A job that fails as a whole leaves neither its audit row nor a delivery of it.
        let missing = SessionCodeRecord(code: "999999999", createdAt: Self.at(0), validUntil: Self.at(60))
        await #expect(throws: StoreError.self) {
            try await engine.write([
                .audit(AuditEvent(time: Self.at(2), code: "123456789", kind: .sessionEnded)), .updateCode(missing),
            ])
        }
        #expect(try engine.latestAuditID() == id)
        #expect(try Self.deliveries(of: sessions, on: engine).map(\.eventID) == [id])
        #expect(try !Self.deliveries(of: every, on: engine).contains { $0.eventKind == "session_ended" })
    }

    static func aClaimLeasesDueEndpointsWithTheirOldestPendingDeliveriesInOrder(
        _ engine: any StoreEngine
    ) async throws {
        let endpoint = Self.endpoint(1, ["session_started", "message_sent"])
        let idle = Self.endpoint(2, ["code_created"])
        try Self.add(endpoint, to: engine)
        try Self.add(idle, to: engine)
        let started = try await Self.audit(.sessionStarted, at: Self.at(1), details: ["device": "Pixel 8"], on: engine)
        let chat = SessionContent(code: "123456789", time: Self.at(2), body: .chat("Grüße — hello"))
        try await engine.write([
            .auditWithContent(AuditEvent(time: Self.at(2), code: "123456789", kind: .messageSent), chat)
        ])
        let sent = try engine.latestAuditID()
        let third = try await Self.audit(.sessionStarted, at: Self.at(3), on: engine)

        let work = try Self.claim(engine, "node-a", now: Self.at(10), leaseUntil: Self.at(40), maxDeliveries: 2)
        #expect(work.map(\.endpoint.id) == [endpoint.id], "only an endpoint with a due delivery")
        let claimed = try #require(work.first)
        #expect(claimed.endpoint.url == endpoint.url && claimed.endpoint.secret == endpoint.secret)
        #expect(claimed.endpoint.eventKinds == endpoint.eventKinds)
        #expect(claimed.items.map { $0.event?.id } == [started, sent], "the two oldest, in order")
        #expect(claimed.items.map(\.delivery.eventID) == [started, sent])
        #expect(claimed.items.map(\.delivery.id) == claimed.items.map(\.delivery.id).sorted())
        try #require(claimed.items.count == 2)
        #expect(
            claimed.items[0].event
                == AuditEvent(
                    id: started, time: Self.at(1), code: "123456789", kind: .sessionStarted,
                    details: ["device": "Pixel 8"]))
        #expect(claimed.items[0].content == nil)
        #expect(claimed.items[1].event?.kind == .messageSent)
        #expect(claimed.items[1].content?.auditID == sent)
        #expect(claimed.items[1].content?.content.body == .chat("Grüße — hello"))

        // Another node while the lease holds (through its last millisecond) gets nothing; after it, the backlog.
        #expect(try Self.claim(engine, "node-b", now: Self.at(20), leaseUntil: Self.at(50)).isEmpty)
        #expect(try Self.claim(engine, "node-b", now: Self.at(40), leaseUntil: Self.at(70)).isEmpty)
        let taken = try Self.claim(engine, "node-b", now: Self.at(41), leaseUntil: Self.at(71))
        #expect(taken.map(\.endpoint.id) == [endpoint.id])
        #expect(taken.first?.items.map { $0.event?.id } == [started, sent, third])
    }

    static func aRetriedDeliveryWaitsForItsNextAttempt(_ engine: any StoreEngine) async throws {
        let endpoint = Self.endpoint(1, ["session_started"])
        try Self.add(endpoint, to: engine)
        _ = try await Self.audit(.sessionStarted, at: Self.at(1), on: engine)
        let work = try Self.claim(engine, "node-a", now: Self.at(2), leaseUntil: Self.at(32))
        let delivery = try #require(work.first?.items.first?.delivery)
        _ = try engine.recordWebhookAttempt(
            WebhookAttempt(
                deliveryID: delivery.id, at: Self.at(3), status: 503, error: "503 Service Unavailable",
                outcome: .retry(at: Self.at(63))), endpoint: endpoint, owner: "node-a", leaseUntil: nil)

        let stored = try #require(try Self.deliveries(of: endpoint, on: engine).first)
        #expect(stored.state == .pending && stored.attempts == 1)
        #expect(stored.nextAttemptAt == Self.at(63) && stored.lastAttemptAt == Self.at(3))
        #expect(stored.lastStatus == 503 && stored.lastError == "503 Service Unavailable")
        #expect(stored.finishedAt == nil)
        #expect(
            try Self.claim(engine, "node-b", now: Self.at(62), leaseUntil: Self.at(92)).isEmpty,
            "not due yet, though no lease holds the endpoint")
        let again = try Self.claim(engine, "node-b", now: Self.at(63), leaseUntil: Self.at(93))
        #expect(again.map(\.endpoint.id) == [endpoint.id])
        #expect(again.first?.items.map(\.delivery.id) == [delivery.id])
        #expect(again.first?.items.first?.delivery.attempts == 1)
    }

    static func aSenderGoesOnOnlyWhileItHoldsTheLeaseOfAnUnchangedEndpoint(_ engine: any StoreEngine) async throws {
        let endpoint = Self.endpoint(1, ["session_started"])
        try Self.add(endpoint, to: engine)
        for second in 1...4 { _ = try await Self.audit(.sessionStarted, at: Self.at(Int64(second)), on: engine) }
        let work = try #require(try Self.claim(engine, "node-a", now: Self.at(5), leaseUntil: Self.at(35)).first)
        #expect(work.items.count == 4)
        func delivered(_ index: Int, by owner: String = "node-a", leased: WebhookEndpoint) throws -> Bool {
            try engine.recordWebhookAttempt(
                WebhookAttempt(
                    deliveryID: work.items[index].delivery.id, at: Self.at(6), status: 200, error: nil,
                    outcome: .delivered), endpoint: leased, owner: owner, leaseUntil: Self.at(40))
        }
        #expect(try delivered(0, leased: work.endpoint), "unchanged and still leased: go on")
        #expect(!(try delivered(1, by: "node-b", leased: work.endpoint)), "another owner never goes on")
        // The admin rotates the secret: the batch leased with the old one stops, and the lease ends at once.
        var rotated = work.endpoint
        rotated.secret = "whsec_rotated"
        _ = try engine.updateWebhookEndpoint(rotated, audit: AuditEvent(time: Self.at(6), kind: .webhookChanged))
        #expect(!(try delivered(1, leased: work.endpoint)), "a sender holding the old secret stops")
        #expect(try Self.deliveries(of: endpoint, on: engine).filter { $0.state == .delivered }.count == 2,
            "what was sent is recorded all the same")
        let next = try #require(
            try Self.claim(engine, "node-b", now: Self.at(7), leaseUntil: Self.at(37)).first, "the lease ended at once")
        #expect(next.endpoint.secret == "whsec_rotated")
        #expect(next.items.map(\.delivery.id) == work.items[2...].map(\.delivery.id))
        // Disabled: the holder stops too.
        var disabled = rotated
        disabled.isEnabled = false
        _ = try engine.updateWebhookEndpoint(disabled, audit: AuditEvent(time: Self.at(8), kind: .webhookChanged))
        #expect(
            !(try engine.recordWebhookAttempt(
                WebhookAttempt(
                    deliveryID: next.items[0].delivery.id, at: Self.at(9), status: 200, error: nil, outcome: .delivered),
                endpoint: next.endpoint, owner: "node-b", leaseUntil: Self.at(40))))
    }

    static func aRetryNowMakesTheBackedOffDeliveriesDue(_ engine: any StoreEngine) async throws {
        let endpoint = Self.endpoint(1, ["session_started"])
        try Self.add(endpoint, to: engine)
        _ = try await Self.audit(.sessionStarted, at: Self.at(1), on: engine)
        let work = try Self.claim(engine, "node-a", now: Self.at(2), leaseUntil: Self.at(32))
        let delivery = try #require(work.first?.items.first?.delivery)
        _ = try engine.recordWebhookAttempt(
            WebhookAttempt(
                deliveryID: delivery.id, at: Self.at(3), status: nil, error: "connection refused",
                outcome: .retry(at: Self.at(3600))), endpoint: endpoint, owner: "node-a", leaseUntil: nil)
        #expect(try Self.claim(engine, "node-a", now: Self.at(10), leaseUntil: Self.at(40)).isEmpty)
        let retried = try engine.retryWebhookDeliveries(
            endpointID: endpoint.id, now: Self.at(10),
            audit: AuditEvent(time: Self.at(10), kind: .webhookChanged, details: ["endpoint": endpoint.id]))
        #expect(retried == 1)
        let due = try Self.claim(engine, "node-a", now: Self.at(10), leaseUntil: Self.at(40))
        #expect(due.first?.items.map(\.delivery.id) == [delivery.id], "due at once after the retry")
        let rows = try engine.auditEvents(
            code: nil, from: nil, to: nil, limit: 10, afterID: nil, beforeID: nil, newestFirst: true)
        #expect(rows.first?.kind == .webhookChanged && rows.first?.details["retried"] == "1", "\(rows)")
        #expect(
            try engine.retryWebhookDeliveries(
                endpointID: "wh_missing", now: Self.at(11),
                audit: AuditEvent(time: Self.at(11), kind: .webhookChanged)) == nil)
        #expect(try engine.auditEvents(
            code: nil, from: nil, to: nil, limit: 10, afterID: nil, beforeID: nil, newestFirst: true).count == rows.count,
            "an unknown endpoint is not audited")
    }

    static func aDeliveredAttemptFinishesTheDeliveryAndTheLeaseMovesOnlyForItsOwner(
        _ engine: any StoreEngine
    ) async throws {
        let endpoint = Self.endpoint(1, ["session_started"])
        try Self.add(endpoint, to: engine)
        let first = try await Self.audit(.sessionStarted, at: Self.at(1), on: engine)
        let second = try await Self.audit(.sessionStarted, at: Self.at(2), on: engine)
        let work = try Self.claim(engine, "node-a", now: Self.at(5), leaseUntil: Self.at(35))
        let items = try #require(work.first?.items)
        #expect(items.map(\.delivery.eventID) == [first, second])
        _ = try engine.recordWebhookAttempt(
            WebhookAttempt(deliveryID: items[0].delivery.id, at: Self.at(6), status: 204, error: nil, outcome: .delivered),
            endpoint: endpoint, owner: "node-a", leaseUntil: nil)

        let stored = try Self.deliveries(of: endpoint, on: engine)
        #expect(stored.map(\.state) == [.delivered, .pending])
        #expect(stored.map(\.attempts) == [1, 0])
        #expect(stored[0].finishedAt == Self.at(6) && stored[0].nextAttemptAt == nil && stored[0].lastStatus == 204)
        #expect(stored[0].lastAttemptAt == Self.at(6) && stored[0].lastError == nil)
        #expect(stored[1].finishedAt == nil && stored[1].nextAttemptAt == Self.at(2))

        // Released: another node takes the endpoint at once, long before node-a's lease would have ended.
        let taken = try Self.claim(engine, "node-b", now: Self.at(6), leaseUntil: Self.at(36))
        #expect(taken.first?.items.map(\.delivery.id) == [items[1].delivery.id])
        // node-b moves its lease forward with an attempt; node-a, which lost it, records a late attempt of its
        // own: recorded, but the lease stays node-b's.
        _ = try engine.recordWebhookAttempt(
            WebhookAttempt(
                deliveryID: items[1].delivery.id, at: Self.at(7), status: 500, error: "500", outcome: .retry(at: Self.at(8))),
            endpoint: endpoint, owner: "node-b", leaseUntil: Self.at(100))
        _ = try engine.recordWebhookAttempt(
            WebhookAttempt(
                deliveryID: items[1].delivery.id, at: Self.at(9), status: nil, error: "timeout", outcome: .retry(at: Self.at(10))),
            endpoint: endpoint, owner: "node-a", leaseUntil: nil)
        #expect(try Self.deliveries(of: endpoint, on: engine).last?.attempts == 2)
        #expect(try Self.claim(engine, "node-a", now: Self.at(50), leaseUntil: Self.at(80)).isEmpty)
        #expect(try Self.claim(engine, "node-a", now: Self.at(101), leaseUntil: Self.at(131)).count == 1)
    }

    static func aGivenUpDeliveryGivesUpTheOlderBacklogOfItsEndpointOnly(_ engine: any StoreEngine) async throws {
        let endpoint = Self.endpoint(1, ["session_started"])
        let other = Self.endpoint(2, ["session_started"])
        try Self.add(endpoint, to: engine)
        try Self.add(other, to: engine)
        for second in [1, 2, 3, 10] { _ = try await Self.audit(.sessionStarted, at: Self.at(Int64(second)), on: engine) }
        let work = try Self.claim(engine, "node-a", now: Self.at(11), leaseUntil: Self.at(41))
        #expect(Set(work.map(\.endpoint.id)) == [endpoint.id, other.id])
        let oldest = try #require(work.first { $0.endpoint.id == endpoint.id }?.items.first?.delivery)
        _ = try engine.recordWebhookAttempt(
            WebhookAttempt(
                deliveryID: oldest.id, at: Self.at(20), status: nil, error: "connect: connection refused",
                outcome: .failed(staleBefore: Self.at(5))), endpoint: endpoint, owner: "node-a", leaseUntil: nil)

        let stored = try Self.deliveries(of: endpoint, on: engine)
        #expect(stored.map(\.state) == [.failed, .failed, .failed, .pending])
        #expect(stored.map(\.attempts) == [1, 0, 0, 0])
        #expect(
            stored.map(\.lastError) == [
                "connect: connection refused", WebhookAttempt.givenUpWithOlder, WebhookAttempt.givenUpWithOlder, nil,
            ])
        #expect(stored.map(\.finishedAt) == [Self.at(20), Self.at(20), Self.at(20), nil])
        #expect(stored.map(\.nextAttemptAt) == [nil, nil, nil, Self.at(10)])
        #expect(try Self.deliveries(of: other, on: engine).map(\.state) == Array(repeating: .pending, count: 4))
        let listed = try engine.webhookEndpoints()
        #expect(listed.map(\.id) == [endpoint.id, other.id])
        #expect(listed.map(\.pendingCount) == [1, 4] && listed.map(\.failedCount) == [3, 0])
    }

    static func aRedeliveryIsANewPendingDeliveryNamedByItsAuditRow(_ engine: any StoreEngine) async throws {
        let endpoint = Self.endpoint(1, ["session_started"])
        let other = Self.endpoint(2, ["session_ended"])
        try Self.add(endpoint, to: engine)
        try Self.add(other, to: engine)
        let event = try await Self.audit(.sessionStarted, at: Self.at(1), on: engine)
        let work = try Self.claim(engine, "node-a", now: Self.at(2), leaseUntil: Self.at(32))
        let original = try #require(work.first?.items.first?.delivery)
        _ = try engine.recordWebhookAttempt(
            WebhookAttempt(deliveryID: original.id, at: Self.at(3), status: 200, error: nil, outcome: .delivered),
            endpoint: endpoint, owner: "node-a", leaseUntil: nil)

        let made = try #require(
            try engine.redeliverWebhook(
                endpointID: endpoint.id, deliveryID: original.id, now: Self.at(30),
                audit: AuditEvent(time: Self.at(30), kind: .webhookRedelivered, details: ["webhook": endpoint.id])))
        #expect(made.id > original.id)
        #expect(
            made
                == WebhookDelivery(
                    id: made.id, endpointID: endpoint.id, eventID: event, eventKind: "session_started",
                    code: "123456789", state: .pending, attempts: 0, createdAt: Self.at(30),
                    nextAttemptAt: Self.at(30), redeliveryOf: original.id))
        #expect(try Self.deliveries(of: endpoint, on: engine).map(\.id) == [original.id, made.id])
        #expect(try Self.deliveries(of: endpoint, on: engine).last == made)
        let row = try #require(
            try engine.auditEvents(
                code: nil, from: nil, to: nil, limit: 1, afterID: nil, beforeID: nil, newestFirst: true
            ).first)
        #expect(row.kind == .webhookRedelivered)
        #expect(row.details == ["webhook": endpoint.id, "delivery": String(made.id)])

        let before = try engine.latestAuditID()
        let unknown = AuditEvent(time: Self.at(31), kind: .webhookRedelivered)
        #expect(try engine.redeliverWebhook(endpointID: endpoint.id, deliveryID: made.id + 100, now: Self.at(31), audit: unknown) == nil)
        #expect(
            try engine.redeliverWebhook(endpointID: other.id, deliveryID: original.id, now: Self.at(31), audit: unknown) == nil,
            "another endpoint's delivery")
        #expect(try engine.latestAuditID() == before, "nothing audited")
        let again = try Self.claim(engine, "node-b", now: Self.at(30), leaseUntil: Self.at(60))
        #expect(again.first?.items.map(\.delivery.id) == [made.id])
        #expect(again.first?.items.first?.event?.id == event)
    }

    static func updatesAndDeletesChangeOnlyEndpointsThatExist(_ engine: any StoreEngine) async throws {
        let endpoint = Self.endpoint(1, ["session_started"])
        let other = Self.endpoint(2, ["session_ended"])
        try Self.add(endpoint, to: engine)
        try Self.add(other, to: engine)
        for second in [1, 2, 3] { _ = try await Self.audit(.sessionStarted, at: Self.at(Int64(second)), on: engine) }
        let work = try Self.claim(engine, "node-a", now: Self.at(4), leaseUntil: Self.at(34))
        let oldest = try #require(work.first?.items.first?.delivery)
        _ = try engine.recordWebhookAttempt(
            WebhookAttempt(
                deliveryID: oldest.id, at: Self.at(5), status: 410, error: "410 Gone",
                outcome: .failed(staleBefore: Self.at(0))), endpoint: endpoint, owner: "node-a", leaseUntil: nil)
        var listed = try engine.webhookEndpoints()
        #expect(listed.map(\.id) == [endpoint.id, other.id])
        #expect(listed.map(\.pendingCount) == [2, 0] && listed.map(\.failedCount) == [1, 0])

        let before = try engine.latestAuditID()
        let nobody = Self.endpoint(99, ["*"])
        #expect(try !engine.updateWebhookEndpoint(nobody, audit: AuditEvent(time: Self.at(6), kind: .webhookChanged)))
        #expect(try !engine.deleteWebhookEndpoint(id: nobody.id, audit: AuditEvent(time: Self.at(6), kind: .webhookDeleted)))
        #expect(try engine.latestAuditID() == before, "nothing audited")

        var changed = endpoint
        changed.url = "https://hooks.example.com/v2"
        changed.eventKinds = ["session_ended", "code_closed"]
        changed.isEnabled = false
        changed.description = nil
        changed.secret = "whsec_new"
        changed.previousSecret = endpoint.secret
        changed.previousSecretUntil = Self.at(100)
        changed.createdAt = Self.at(999)  // not an admin's to change
        #expect(try engine.updateWebhookEndpoint(changed, audit: AuditEvent(time: Self.at(6), kind: .webhookChanged)))
        listed = try engine.webhookEndpoints()
        var expected = changed
        expected.createdAt = endpoint.createdAt
        expected.pendingCount = 2
        expected.failedCount = 1
        #expect(listed.first == expected)
        #expect(try engine.latestAuditID() == before + 1)

        // Disabled: its pending deliveries wait, and a row of a kind it now wants makes none.
        _ = try await Self.audit(.sessionEnded, at: Self.at(7), on: engine)
        #expect(try Self.deliveries(of: endpoint, on: engine).count == 3)
        #expect(try Self.claim(engine, "node-a", now: Self.at(40), leaseUntil: Self.at(70)).map(\.endpoint.id) == [other.id])

        #expect(try engine.deleteWebhookEndpoint(id: endpoint.id, audit: AuditEvent(time: Self.at(8), kind: .webhookDeleted)))
        #expect(try Self.deliveries(of: endpoint, on: engine).isEmpty, "its delivery log goes with it")
        #expect(try engine.webhookEndpoints().map(\.id) == [other.id])
        #expect(
            try engine.auditEvents(code: nil, from: nil, to: nil, limit: 1, afterID: nil, beforeID: nil, newestFirst: true)
                .map(\.kind) == [.webhookDeleted])
        #expect(try !engine.deleteWebhookEndpoint(id: endpoint.id, audit: AuditEvent(time: Self.at(9), kind: .webhookDeleted)))
    }

    static func pruningDeletesOnlyDeliveriesFinishedBeforeTheBound(_ engine: any StoreEngine) async throws {
        let endpoint = Self.endpoint(1, ["session_started"])
        try Self.add(endpoint, to: engine)
        for second in [1, 2, 3, 4] { _ = try await Self.audit(.sessionStarted, at: Self.at(Int64(second)), on: engine) }
        let work = try Self.claim(engine, "node-a", now: Self.at(5), leaseUntil: Self.at(1000))
        let ids = try #require(work.first?.items.map(\.delivery.id))
        try #require(ids.count == 4)
        let outcomes: [(Int64, WebhookAttempt.Outcome)] = [
            (10, .delivered), (20, .failed(staleBefore: Self.at(0))), (30, .delivered),
        ]
        for (index, (second, outcome)) in outcomes.enumerated() {
            _ = try engine.recordWebhookAttempt(
                WebhookAttempt(deliveryID: ids[index], at: Self.at(second), status: nil, error: nil, outcome: outcome),
                endpoint: endpoint, owner: "node-a", leaseUntil: Self.at(1000))
        }
        #expect(try Self.deliveries(of: endpoint, on: engine).map(\.state) == [.delivered, .failed, .delivered, .pending])
        #expect(try engine.pruneWebhookDeliveries(finishedBefore: Self.at(30)) == 2)
        #expect(try Self.deliveries(of: endpoint, on: engine).map(\.id) == [ids[2], ids[3]])
        #expect(try engine.pruneWebhookDeliveries(finishedBefore: Self.at(5000)) == 1, "never a pending one")
        #expect(try Self.deliveries(of: endpoint, on: engine).map(\.id) == [ids[3]])
    }

    // MARK: helpers

    /// A time on a whole millisecond, `seconds` after the tests' start of time.
    public static func at(_ seconds: Int64) -> Date { Date(unixMilliseconds: 1_700_000_000_000 + seconds * 1000) }

    /// Endpoint `number` (id `wh_` and 16 hexadecimal digits), enabled unless told, wanting `kinds`.
    public static func endpoint(_ number: Int, _ kinds: [String], enabled: Bool = true) -> WebhookEndpoint {
        let hex = String(number, radix: 16)
        let id = "wh_" + String(repeating: "0", count: 16 - hex.count) + hex
        return WebhookEndpoint(
            id: id, url: "https://hooks.example.com/\(id)", eventKinds: kinds, isEnabled: enabled,
            description: "receiver \(number)", createdAt: at(0), secret: "whsec_\(id)")
    }

    /// Adds `endpoint` to the engine, audited as an admin's would be.
    public static func add(_ endpoint: WebhookEndpoint, to engine: any StoreEngine) throws {
        try engine.addWebhookEndpoint(
            endpoint, audit: AuditEvent(time: at(0), kind: .webhookCreated, details: ["webhook": endpoint.id]))
    }

    /// Appends an audit row of code 123456789 through the engine's writer; returns its id.
    public static func audit(
        _ kind: AuditEvent.Kind, at time: Date, details: [String: String] = [:], on engine: any StoreEngine
    ) async throws -> Int64 {
        try await engine.write([.audit(AuditEvent(time: time, code: "123456789", kind: kind, details: details))])
        return try engine.latestAuditID()
    }

    /// The endpoint's delivery log, oldest first.
    public static func deliveries(of endpoint: WebhookEndpoint, on engine: any StoreEngine) throws -> [WebhookDelivery] {
        try engine.webhookDeliveries(endpointID: endpoint.id, beforeID: nil, state: nil, limit: 1000).reversed()
    }

    /// Claims the due work of up to `maxEndpoints` endpoints for `owner`, leased until `leaseUntil`.
    public static func claim(
        _ engine: any StoreEngine, _ owner: String, now: Date, leaseUntil: Date, maxEndpoints: Int = 10,
        maxDeliveries: Int = 10
    ) throws -> [WebhookWork] {
        try engine.claimWebhookWork(
            owner: owner, now: now, leaseUntil: leaseUntil, maxEndpoints: maxEndpoints, maxDeliveries: maxDeliveries)
    }
}
