import Foundation
import SupporterCore
import SupportSession
import Testing
import SupportWire
import TestSupport
import SupportVocabulary
import SupporterModel

/// Code rules (SPEC §15.3) in the registry: changed by a command, audited, seen at once by later decisions.
@Suite struct CodeRegistryFeatureRulesTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let chat = Feature.ID(rawValue: 6)
    let rest = AuditActor(kind: "rest", tokenID: "a1b2c3d4e5f6", address: "198.51.100.7")

    func registry(with rules: FeatureRules = .codeDefault) throws -> CodeRegistry {
        var registry = CodeRegistry()
        _ = try registry.createCode(
            SessionCodeRecord(
                code: "123-456-789", createdAt: start, validUntil: start.addingTimeInterval(3600), featureRules: rules),
            by: .local)
        return registry
    }

    func audits(_ intents: [StoreIntent]) -> [AuditEvent] {
        intents.compactMap { if case .audit(let event) = $0 { event } else { nil } }
    }

    @Test func aChangeIsStoredAuditedWithTheActorAndSeenAtOnce() throws {
        var registry = try registry()
        let rules = FeatureRules(default: .allow, rules: [Self.chat: .deny, .remoteControl: .confirm])
        let (info, intents) = try registry.setFeatureRules("123-456-789", rules, by: rest, now: start)
        #expect(info.record.featureRules == rules)
        #expect(registry.featureRules(of: "123-456-789") == rules)
        #expect(registry.info("123-456-789", now: start)?.record.featureRules == rules)
        #expect(intents.first == .updateCode(info.record))
        let event = try #require(audits(intents).first)
        #expect(event.kind == .codeUpdated && event.code == "123-456-789" && event.time == start)
        #expect(
            event.details == [
                "what": "code_feature_rules_changed", "actor": "rest", "actor_token": "a1b2c3d4e5f6",
                "actor_address": "198.51.100.7", "previous_feature_rules": "default=allow",
                // In id order; `chat` reads `feature(0x6)` until SupportWire names it (Feature.ID.description).
                "feature_rules": "default=allow remote_control=confirm \(Self.chat)=deny",
            ])
    }

    @Test func theSameRulesAgainChangeAndRecordNothing() throws {
        let rules = FeatureRules(default: .deny)
        var registry = try registry(with: rules)
        let (_, intents) = try registry.setFeatureRules("123-456-789", rules, by: .local, now: start)
        #expect(intents.isEmpty)
    }

    @Test func anUnknownCodeIsNotFound() throws {
        var registry = try registry()
        #expect(registry.featureRules(of: "000-000-000") == nil)
        do throws(RegistryError) {
            _ = try registry.setFeatureRules("000-000-000", .codeDefault, by: .local, now: start)
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .notFound)
        }
    }

    @Test func aMetadataUpdateCannotChangeTheRules() throws {
        let rules = FeatureRules(default: .confirm)
        var registry = try registry(with: rules)
        let (info, _) = try registry.updateCode("123-456-789", by: .local, now: start) { record in
            record.waitingMessage = "hi"
            record.featureRules = .codeDefault
        }
        #expect(info.record.waitingMessage == "hi")
        #expect(info.record.featureRules == rules)
    }

    @Test func creationAuditsRulesOtherThanTheDefault() throws {
        var registry = CodeRegistry()
        let plain = try registry.createCode(
            SessionCodeRecord(code: "1", createdAt: start, validUntil: start), by: .local)
        #expect(audits(plain).first?.details["feature_rules"] == nil)
        let strict = try registry.createCode(
            SessionCodeRecord(code: "2", createdAt: start, validUntil: start, featureRules: FeatureRules(default: .deny)),
            by: .local)
        #expect(audits(strict).first?.details["feature_rules"] == "default=deny")
    }

    @Test func aPlannedChangeChangesNothingUntilApplied() throws {
        var registry = try registry()
        let rules = FeatureRules(default: .confirm)
        let (change, info, intents) = try registry.planFeatureRules("123-456-789", rules, by: .local, now: start)
        // Decided, with what to store and what the caller will be told, and nothing in effect yet.
        #expect(info.record.featureRules == rules)
        #expect(!intents.isEmpty)
        #expect(registry.featureRules(of: "123-456-789") == .codeDefault)
        registry.apply(try #require(change), now: start)
        #expect(registry.featureRules(of: "123-456-789") == rules)
    }

    @Test func plannedCodeChangesLeaveTheRegistryAsItWas() throws {
        let registry = try registry()
        _ = try registry.planUpdateCode("123-456-789", by: .local, now: start) { $0.description = "new" }
        _ = try registry.planFinishCode("123-456-789", closing: true, by: .local, now: start)
        _ = try registry.planDeleteCode("123-456-789", by: .local, now: start)
        let info = try #require(registry.info("123-456-789", now: start))
        #expect(info.record.description == nil)
        #expect(info.state != .closed)
    }

    @Test func anUpdateKeepsAnAssigneeSetWhileItWasStored() throws {
        var registry = try registry()
        let (change, _, _) = try registry.planUpdateCode("123-456-789", by: .local, now: start) {
            $0.description = "printer"
        }
        // Meanwhile a supporter's request assigned the code (the device's path).
        let sent = registry.requestSent(
            code: "123-456-789", requestID: 1, supporterName: "Alice", type: .screenShare, by: .local, now: start)
        registry.requestCommitted(code: "123-456-789", assignee: sent.assignee)
        registry.apply(change, now: start)
        let record = try #require(registry.info("123-456-789", now: start)).record
        #expect(record.description == "printer")
        #expect(record.assignedSupporter == "Alice")
    }
}
