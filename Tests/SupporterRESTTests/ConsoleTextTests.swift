import Foundation
import Testing
import TestSupport
@testable import SupporterREST
import SupporterNode
import SupporterCore
import SupportSession
import SupportWire
import SupportHTTP
import SupportRuntime

/// The web console shows C1, bidi and other controls in server text visibly escaped (issue 20, finding 12): its one
/// escaping function (Console/text.js) run by Node (tests/web/console_text_test.mjs), and the file served beside
/// console.js, which imports it. In a real browser, tests/web/console_e2e.py's `controls-shown-escaped` scenario
/// checks the page itself (CLITests' WebConsoleTests runs it when chromium and selenium are installed).
@Suite struct ConsoleTextTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func theConsolesEscapingFunctionPassesItsCasesInNode() async throws {
        let node = ["/usr/bin/node", "/usr/local/bin/node"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let node else {
            Issue.record("node is not installed: the console's escaping function cannot be run")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rsup-js-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out").path
        let process = try ChildProcess(
            node, [Self.package.appendingPathComponent("tests/web/console_text_test.mjs").path], stdout: .file(out),
            stderr: .sameAsStdout)
        let status = await process.waitForExit(timeout: .seconds(60))
        let output = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data(), as: UTF8.self)
        #expect(status == 0, "\(output)")
        #expect(output.contains("PASS bidi controls"), "\(output)")
        #expect(!output.contains("FAIL"), "\(output)")
    }

    @Test func theConsoleServesItsTextModuleAndImportsIt() throws {
        let files = ConsoleFiles()
        let text = try #require(files.response(for: "/text.js"))
        #expect(text.headers["Content-Type"] == "text/javascript; charset=utf-8")
        let console = try #require(files.response(for: "/console.js"))
        let source = String(decoding: console.body, as: UTF8.self)
        #expect(source.contains("import { setText, visibleText } from '/text.js';"))
        #expect(!source.contains(".textContent ="), "every text goes through setText")
    }
}
