import CLIKit
import Foundation
import SupporterNode
import SupporterREST
import SupportSession
import SupportUtilities
import SupporterCore
import SupportWire
import SupportRuntime

/// `rsup-supporter rules`: shows a code's rules (SPEC §15.3) or changes them, through the running node's control
/// socket. The node audits each change (`code_updated`, `what: code_feature_rules_changed`, actor `local`).
enum Rules {
    static let usage = """
        usage: rsup-supporter rules --code CODE [NAME=RULE | NAME=default]... [--default-rule RULE] [--reset]
                                    [--data DIR] [--json]

        Shows the code rules of one session code; with changes, applies them and shows the result.

          NAME=RULE            the rule of one feature: allow, confirm (the device's user must confirm it) or deny
          NAME=default         the feature has no rule of its own any more: it follows the default rule
          --default-rule RULE  the rule of every feature without a rule of its own
          --reset              start from the code default (allow, no feature rules) before the other changes

        features: \(FeatureRuleNames.featureList)
        A device on the code keeps what it was granted; the new rules apply from its next request on.
        example: rsup-supporter rules --code 123-456-789 chat=deny remote_control=confirm
        """

    static func run(_ arguments: [String]) throws(CLIError) {
        let parsed = try ParsedArguments(
            arguments, valueOptions: ["code", "default-rule", "data"], flagOptions: ["json", "reset"])
        if parsed.has("help") {
            print(usage)
            return
        }
        let code = try parsed.require("code")
        guard SessionCodeFormat.isWellFormed(code) else {
            throw .usage("'\(TerminalText.escaped(code))' is not a session code (the format is 123-456-789)")
        }
        // Checked here, so that a typo is a usage error and nothing is sent; the node checks again.
        for assignment in parsed.positionals { _ = try SupporterCommands.ruleAssignment(assignment, allowDefault: true) }
        if let text = parsed.options["default-rule"] { _ = try SupporterCommands.defaultRule(text) }
        var request: [String: Any] = ["command": "rules", "code": code, "set": parsed.positionals]
        if let text = parsed.options["default-rule"] { request["default-rule"] = text }
        if parsed.has("reset") { request["reset"] = true }
        guard let (reply, console) = try sendCommand(request, parsed) else { return }
        let rules = reply["feature_rules"] as? [String: Any] ?? [:]
        console.line(escaping: "\(reply["code"] ?? code)  default \(rules["default"] ?? "?")")
        let named = (rules["rules"] as? [String: String] ?? [:]).sorted { $0.key < $1.key }
        for (name, rule) in named { console.line(escaping: "  \(name.padding(toLength: 15, withPad: " ", startingAt: 0)) \(rule)") }
        if named.isEmpty { console.line("  (no feature has a rule of its own)") }
    }
}
