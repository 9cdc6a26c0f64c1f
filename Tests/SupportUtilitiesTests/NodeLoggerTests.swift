// NodeLogger escapes at the sink (SPEC §4.2); Redact keeps secrets out of logs and escapes what it keeps (SPEC §13).
import Synchronization
import SupportUtilities
import Testing

@Suite struct NodeLoggerTests {
    /// A logger whose sink keeps what it is given.
    final class Captured: Sendable {
        let lines = Mutex<[String]>([])
        var logger: NodeLogger {
            NodeLogger(minimumLevel: .debug) { [self] _, message in lines.withLock { $0.append(message) } }
        }
    }

    @Test("a device name with a line break cannot forge a second log line")
    func deviceNameCannotForgeALine() {
        let captured = Captured()
        let name = "x\n2026-01-01T00:00:00.000Z info supporter: forged"
        captured.logger.log(.info, "code 123… online: device '\(name)'")
        let lines = captured.lines.withLock { $0 }
        #expect(lines == [#"code 123… online: device 'x\n2026-01-01T00:00:00.000Z info supporter: forged'"#])
        #expect(lines.allSatisfy { !$0.contains("\n") })
    }

    @Test(
        "the sink never sees a control character",
        arguments: ["\u{1B}[31mred", "nul\u{0}", "\u{9B}2J", "\r\rover", "rtl\u{202E}txt", "\u{2028}", "\u{7F}"])
    func sinkSeesNoControls(text: String) {
        let captured = Captured()
        captured.logger.log(.warning, "device '\(text)' broke the protocol")
        let lines = captured.lines.withLock { $0 }
        #expect(lines == ["device '\(TerminalText.escaped(text))' broke the protocol"])
        #expect(!lines[0].unicodeScalars.contains { TerminalText.needsEscaping($0) && $0 != "\\" })
    }

    @Test("a message is escaped once, at the sink")
    func escapesOnce() {
        let captured = Captured()
        captured.logger.log(.info, #"path C:\temp, newline \n, real"# + "\n")
        #expect(captured.lines.withLock { $0 } == [#"path C:\\temp, newline \\n, real\n"#])
    }

    @Test("a message below the minimum level is neither built nor written")
    func skipsBelowMinimumLevel() {
        let captured = Captured()
        var logger = captured.logger
        logger.minimumLevel = .warning
        logger.log(.info, { () -> String in
            Issue.record("the message was built")
            return "never"
        }())
        #expect(captured.lines.withLock { $0 }.isEmpty)
    }

    @Test(
        "a session code is logged as its first 3 scalars, escaped, then …",
        arguments: [
            ("123-456-789", "123…"),
            ("12", "12…"),
            ("", "…"),
            ("\n2026-01-01 forged", #"\n20…"#),
            ("\u{1B}[31m", #"\x1B[3…"#),
            ("\u{0}\u{9B}\u{202E}xyz", #"\x00\x9B\u{202E}…"#),
            (#"\\\"#, #"\\\\\\…"#),
            ("1\u{301}\u{301}\u{301}\u{301}", "1\u{301}\u{301}…"),
            ("\r\n123", #"\r\n1…"#),
        ])
    func redactsAndEscapesCodes(code: String, expected: String) {
        #expect(Redact.code(code) == expected)
    }

    @Test("a token is shown only by its length")
    func redactsTokens() {
        #expect(Redact.token("rsk_secret\n") == "<token: 11 bytes>")
    }
}
