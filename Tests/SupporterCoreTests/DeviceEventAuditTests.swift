import Foundation
import SupporterCore
import SupportSession
import Testing
import SupportWire
import TestSupport
import SupporterModel

/// Audit quotas of the events a device can repeat at will (SESSION_ERROR, VOIP_STATE): per code and per device token,
/// with one aggregate row per window for what was held back (SPEC §13.1).
@Suite struct DeviceEventAuditTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func online(_ registry: inout CodeRegistry, _ connection: UInt64, code: String, token: String) throws {
        _ = try registry.createCode(
            SessionCodeRecord(
                code: code, waitingMessage: nil, createdAt: start, validUntil: start.addingTimeInterval(3600)),
            by: .local)
        #expect(registry.connectionOpened(ConnectionID(connection), address: "198.51.100.\(connection)", now: start) == .admit)
        guard case .accepted = registry.register(
            RegistrationAttempt(connection: ConnectionID(connection), code: code, deviceTokenID: token, deviceName: "Pixel"),
            now: start)
        else {
            Issue.record("registration refused")
            return
        }
        registry.registrationCommitted(ConnectionID(connection), code: code)
    }

    func rows(_ intents: [StoreIntent]) -> [AuditEvent] {
        intents.compactMap { if case .audit(let event) = $0 { event } else { nil } }
    }

    @Test func aFloodOfSessionErrorsFromOneDeviceWritesItsQuotaAndOneAggregateRow() throws {
        var registry = CodeRegistry()
        let quota = registry.policy.deviceEventRowsPerCode
        try online(&registry, 1, code: "123-456-789", token: "tok1")
        var written = 0
        var reported = 0
        for index in 0..<33_000 {
            let event: SupporterSessionEvent =
                index % 2 == 0
                ? .sessionError(reason: .featureDenied, feature: nil, text: nil)
                : .voipState(.started, text: nil)
            let outcome = registry.sessionEventOutcome(event, on: ConnectionID(1), now: start.addingTimeInterval(Double(index) / 10_000))
            written += rows(outcome.intents).count
            if outcome.reported { reported += 1 }
        }
        #expect(written == quota)
        #expect(reported == quota, "events past the quota must not be reported one by one")
        let flushed = rows(registry.tick(now: start.addingTimeInterval(61)).intents)
            .filter { $0.details["what"] == "device_events_suppressed" }
        #expect(flushed.count == 1)
        #expect(flushed.first?.code == "123-456-789")
        #expect(flushed.first?.details["count"] == "\(33_000 - quota)")
        // A new window: the device's events are recorded again.
        let later = registry.sessionEventOutcome(
            .voipState(.started, text: nil), on: ConnectionID(1), now: start.addingTimeInterval(62))
        #expect(rows(later.intents).count == 1 && later.reported)
    }

    @Test func everyDeviceOfOneTokenSharesTheTokenQuota() throws {
        var registry = CodeRegistry()
        let perCode = registry.policy.deviceEventRowsPerCode
        let perToken = registry.policy.deviceEventRowsPerToken
        let devices = perToken / perCode + 3
        var written = 0
        for device in 1...devices {
            let code = String(format: "%03d-%03d-%03d", device, device, device)
            try online(&registry, UInt64(device), code: code, token: "shared")
            for _ in 0..<(perCode * 2) {
                written += rows(
                    registry.sessionEventOutcome(
                        .sessionError(reason: .featureDenied, feature: nil, text: nil), on: ConnectionID(UInt64(device)),
                        now: start)
                        .intents
                ).count
            }
        }
        #expect(written == perToken)
        let flushed = rows(registry.tick(now: start.addingTimeInterval(61)).intents)
        let tokenRow = flushed.first { $0.details["scope"] == "token" }
        #expect(tokenRow?.details["token"] == "shared")
        #expect(tokenRow?.details["count"] == "\(devices * perCode - perToken)")
        // Another token is not held back by the first one's flood.
        try online(&registry, 999, code: "999-999-999", token: "other")
        let other = registry.sessionEventOutcome(
            .sessionError(reason: .featureDenied, feature: nil, text: nil), on: ConnectionID(999), now: start.addingTimeInterval(30))
        #expect(rows(other.intents).count == 1)
    }
}
