import Foundation
import Testing
import DeviceNode
import SupportWire
import TestSupport

/// `rsup-supporter create --feature-rule` and `rsup-supporter rules`: code rules (SPEC §15.3) from the command line.
@Suite("rsup-supporter code rules", .serialized)
struct CodeRulesCLITests {
    @Test(
        "bad rules are usage errors naming the bad input, before any node is asked: exit 2",
        arguments: [
            (["create", "--feature-rule", "telepathy=deny"], "unknown feature 'telepathy'"),
            (["create", "--feature-rule", "chat=maybe"], "unknown rule 'maybe'"),
            (["create", "--feature-rule", "chat"], "'chat' is not NAME=RULE"),
            (["create", "--feature-rule", "=deny"], "'=deny' is not NAME=RULE"),
            (["create", "--feature-rule", "chat=default"], "unknown rule 'default'"),
            (["create", "--default-rule", "never"], "--default-rule: unknown rule 'never'"),
            (["rules", "--code", "123-456-789", "chat=sometimes"], "unknown rule 'sometimes'"),
            (["rules", "--code", "123-456-789", "holograms=deny"], "unknown feature 'holograms'"),
            (["rules", "--code", "123-456-789", "--default-rule", "x"], "--default-rule: unknown rule 'x'"),
            (["rules", "--code", "12345", "chat=deny"], "'12345' is not a session code"),
            (["rules", "chat=deny"], "--code is required"),
            (["rules", "--code", "123-456-789", "--bogus"], "unknown option --bogus"),
        ])
    func badInputIsAUsageError(arguments: [String], words: String) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        // A data folder with no node: the error must come before the control socket is tried.
        let result = try await runCommand(Binaries.supporter, arguments + ["--data", folder.file("none")])
        expectError(result, exitCode: 2, mentions: [words])
    }

    @Test("rules --help lists the features and rules")
    func help() async throws {
        let result = try await supporter("rules", "--help")
        #expect(result.exitCode == 0, "\(result)")
        let text = result.stdout.joined(separator: "\n")
        #expect(text.hasPrefix("usage: rsup-supporter rules"), "\(result)")
        #expect(text.contains("app_messages") && text.contains("confirm"), "\(result)")
    }

    @Test("create with rules, show them, change them (audited as a local change), unknown code fails")
    func createShowAndChange() async throws {
        try await withSupporter { _, node in
            let created = try await node.control([
                "create", "--feature-rule", "chat=deny", "--feature-rule", "remote-control=confirm",
            ])
            let code = try #require((created["code"] as? [String: Any])?["code"] as? String, "\(created)")
            let shown = try await node.control(["rules", "--code", code])
            let rules = shown["feature_rules"] as? [String: Any]
            #expect(rules?["default"] as? String == "allow", "\(shown)")
            #expect(rules?["rules"] as? [String: String] == ["chat": "deny", "remote_control": "confirm"], "\(shown)")

            let changed = try await node.control([
                "rules", "--code", code, "chat=default", "file_share=deny", "--default-rule", "confirm",
            ])
            let now = changed["feature_rules"] as? [String: Any]
            #expect(now?["default"] as? String == "confirm", "\(changed)")
            #expect(now?["rules"] as? [String: String] == ["file_share": "deny", "remote_control": "confirm"], "\(changed)")
            let reset = try await node.control(["rules", "--code", code, "--reset"])
            let cleared = reset["feature_rules"] as? [String: Any]
            #expect(cleared?["default"] as? String == "allow", "\(reset)")
            #expect(cleared?["rules"] as? [String: String] == [:], "\(reset)")

            // For people: one line per rule.
            let text = try await runCommand(
                Binaries.supporter, ["rules", "--code", code, "voip=deny", "--data", node.data])
            #expect(text.exitCode == 0, "\(text)")
            #expect(text.stdout == ["\(code)  default allow", "  voip            deny"], "\(text)")

            let missing = try await runCommand(Binaries.supporter, ["rules", "--code", "000-000-000", "--data", node.data])
            expectError(missing, exitCode: 1, mentions: ["no such code"])

            let audit = try await runCommand(Binaries.supporter, ["audit", "--code", code, "--json", "--data", node.data])
            let events = audit.stdout.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let changes = events.compactMap { $0["details"] as? [String: Any] }.filter {
                $0["what"] as? String == "code_feature_rules_changed"
            }
            #expect(changes.count == 3, "\(events)")
            #expect(changes.allSatisfy { $0["actor"] as? String == "local" }, "\(changes)")
            #expect(changes.last?["feature_rules"] as? String == "default=allow voip=deny", "\(changes)")
            let creation = events.first { $0["kind"] as? String == "code_created" }
            #expect(((creation?["details"] as? [String: Any])?["feature_rules"] as? String)?.contains("=deny") == true)
        }
    }
}
