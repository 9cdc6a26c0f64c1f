import Foundation
import SupportSession
import SupporterCore
import SupporterModel
import Testing

/// The sessions a lone node's previous process left (``UnresumedSession``): shown reconnecting, resumed, replaced by
/// a new registration, or ended after the grace — each with the rows a user reads in the audit trail.
@Suite struct CodeRegistryUnresumedTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let code = "123-456-789"

    func registry(codeLifetime: TimeInterval = 3600) throws -> CodeRegistry {
        var registry = CodeRegistry()
        _ = try registry.createCode(
            SessionCodeRecord(
                code: code, waitingMessage: "hold on", createdAt: start,
                validUntil: start.addingTimeInterval(codeLifetime)),
            by: .local)
        return registry
    }

    func unresumed(_ phase: SupporterSessionMachine.ResumeSnapshot.Phase, activeSince: Date? = nil) -> UnresumedSession {
        let snapshot = SupporterSessionMachine.ResumeSnapshot(
            code: code, phase: phase, request: nil, deviceCapabilities: [], lastRequestID: 0, granted: [],
            registrationExtensions: [], lastEndedRequestID: nil, lastEndedReason: nil, secrets: ["secret"])
        return UnresumedSession(state: StoredResumeState(snapshot), activeSince: activeSince)
    }

    func rows(_ intents: [StoreIntent]) -> [(AuditEvent.Kind, [String: String])] {
        intents.compactMap { if case .audit(let event) = $0 { (event.kind, event.details) } else { nil } }
    }

    @Test func aLoadedSessionIsShownReconnectingUntilItsGraceEndsIt() throws {
        var registry = try registry()
        registry.loadUnresumed([unresumed(.active, activeSince: start.addingTimeInterval(-90))], deadline: start + 30)
        let info = try #require(registry.info(code, now: start))
        #expect(info.state == .active && info.reconnecting)
        #expect(registry.expireUnresumed(now: start + 29).ended.isEmpty)
        let (ended, intents) = registry.expireUnresumed(now: start + 30)
        #expect(ended == [code])
        let audit = rows(intents)
        #expect(audit.map(\.0) == [.sessionEnded, .deviceOffline])
        #expect(audit.allSatisfy { $0.1["reason"] == "connection_lost" })
        #expect(audit.first?.1["duration_ms"] == "120000")
        #expect(intents.contains(.releasePresence(code: code)))
        #expect(registry.info(code, now: start + 30)?.state == .open)
        #expect(registry.unresumedSession(on: code) == nil)
        #expect(registry.expireUnresumed(now: start + 31).intents.isEmpty, "ended once")
    }

    @Test func aSessionThatWasNotActiveEndsWithoutASessionEndedRow() throws {
        var registry = try registry()
        registry.loadUnresumed([unresumed(.online)], deadline: start + 30)
        #expect(registry.info(code, now: start)?.state == .online)
        #expect(rows(registry.expireUnresumed(now: start + 30).intents).map(\.0) == [.deviceOffline])
    }

    @Test func aSessionWhoseCodeExpiredEndsAtTheNextTickNotAfterTheGrace() throws {
        var registry = try registry(codeLifetime: 10)
        registry.loadUnresumed([unresumed(.online)], deadline: start + 30)
        #expect(registry.expireUnresumed(now: start + 9).ended.isEmpty)
        #expect(registry.expireUnresumed(now: start + 10).ended == [code])
    }

    @Test func aResumedSessionIsAdoptedWithWhyNodeRestartedAndNeverEnded() throws {
        var registry = try registry()
        registry.loadUnresumed([unresumed(.active, activeSince: start)], deadline: start + 30)
        #expect(registry.connectionOpened(ConnectionID(1), address: "198.51.100.7", now: start) == .admit)
        let adopted = registry.adoptSession(
            ConnectionID(1), code: code, deviceName: "Pixel", state: .active, previousNode: "node-a",
            why: "node_restarted", now: start + 5)
        let intents = try #require(adopted)
        #expect(rows(intents).map(\.1["why"]) == ["node_restarted"])
        #expect(registry.unresumedSession(on: code) == nil)
        #expect(registry.expireUnresumed(now: start + 30).intents.isEmpty)
    }

    @Test func aNewRegistrationEndsTheOldSessionBeforeItsOwnOnlineRow() throws {
        var registry = try registry()
        registry.loadUnresumed([unresumed(.online)], deadline: start + 30)
        #expect(registry.connectionOpened(ConnectionID(1), address: "198.51.100.7", now: start) == .admit)
        let outcome = registry.register(
            RegistrationAttempt(connection: ConnectionID(1), code: code, deviceTokenID: "tok1", deviceName: "Pixel"),
            now: start + 1)
        guard case .accepted(_, _, let intents) = outcome else {
            Issue.record("refused: \(outcome)")
            return
        }
        #expect(rows(intents).map(\.0) == [.deviceOffline, .deviceOnline])
        #expect(registry.expireUnresumed(now: start + 30).intents.isEmpty)
    }
}
