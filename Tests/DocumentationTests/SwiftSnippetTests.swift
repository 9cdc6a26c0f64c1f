import Foundation
import Testing

// Every ```` ```swift ```` block in README.md and docs/*.md is type-checked (`swiftc -typecheck`, Swift 6 language
// mode) against the modules this package has just built, so a sample that stops compiling fails `swift test`,
// naming the page and line and showing the compiler's message.
//
// The conventions (docs/architecture.md, "Swift snippets in these pages"): every `swift` block must compile; shell
// and other blocks are not compiled. A block is a whole Swift file of declarations unless the line just before its
// fence is one of these marks:
//
// - `<!-- snippet: main -->` — top-level code, type-checked as a program's `main.swift`.
// - `<!-- snippet: body(node: SupporterNode, code: String) -->` — statements: the block's `import` lines stay at the
//   top of the file and the rest becomes the body of `func snippet(node: SupporterNode, code: String) async throws`;
//   the parentheses are optional, and `<!-- snippet: @MainActor body(…) -->` makes the function main-actor isolated.
//
// The test takes the module search path (the test binary's own build folder, `Modules/` in it), the folders of the
// C module maps under `Sources/`, and the `pkgConfig` include paths Package.swift names — never a list of modules —
// so renaming or splitting modules needs no change here; a page that imports a module needs that module among this
// target's dependencies in Package.swift (so SwiftPM builds it before the tests run).
@Suite(.serialized)
struct SwiftSnippetTests {
    @Test("every Swift snippet in README.md and docs/*.md type-checks", arguments: try Snippet.all())
    func snippetTypeChecks(_ snippet: Snippet) async throws {
        let result = try await SnippetChecker.shared.typeCheck(snippet)
        if result.status != 0 {
            Issue.record(
                "\(snippet): this Swift snippet does not compile (swiftc exit \(result.status)):\n\(result.output)",
                sourceLocation: snippet.sourceLocation)
        }
    }

    @Test("the pages hold snippets and every mark is understood")
    func pagesHoldSnippets() throws {
        let snippets = try Snippet.all()
        #expect(snippets.contains { $0.page == "README.md" }, "the README's SDK sample was not found")
        #expect(snippets.count >= 5, "only \(snippets.count) snippets found: is the fence finder broken?")
    }

    /// The checker must be able to fail: a snippet with an undefined name is refused, and the message names the page
    /// and line it came from.
    @Test("a broken snippet is reported with its page and line")
    func aBrokenSnippetFails() async throws {
        let snippet = Snippet(
            page: "docs/example.md", fenceLine: 41, kind: .body(parameters: "", mainActor: false),
            code: "import SupportWire\nlet decoder = FrameDecoder()\nlet message = try decoder.noSuchMethod()\n")
        let result = try await SnippetChecker.shared.typeCheck(snippet)
        #expect(result.status != 0)
        #expect(result.output.contains("docs/example.md:44"), "\(result.output)")
        #expect(result.output.contains("noSuchMethod"), "\(result.output)")
    }
}

/// One fenced Swift block of a page.
struct Snippet: Sendable, CustomTestStringConvertible, CustomStringConvertible {
    enum Kind: Sendable, Equatable {
        /// A whole file of declarations.
        case file
        /// Top-level code (`main.swift`).
        case main
        /// Statements, wrapped in a function with these parameters.
        case body(parameters: String, mainActor: Bool)
    }

    /// The page, relative to the package root (`README.md`, `docs/sdk.md`).
    let page: String
    /// The 1-based line of the opening fence.
    let fenceLine: Int
    let kind: Kind
    /// The block's lines, with the fence's indentation removed.
    let code: String

    var description: String { "\(page):\(fenceLine + 1)" }
    var testDescription: String { description }

    var sourceLocation: SourceLocation {
        SourceLocation(
            fileID: "RemoteSupport/\(page)", filePath: Snippet.root.appendingPathComponent(page).path,
            line: fenceLine + 1, column: 1)
    }

    /// The package root: two folders above this file's folder.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// README.md and every page under docs/, in order.
    static func pages() throws -> [String] {
        var pages = ["README.md"]
        let docs = root.appendingPathComponent("docs")
        if let walker = FileManager.default.enumerator(atPath: docs.path) {
            var found: [String] = []
            while let name = walker.nextObject() as? String {
                if name.hasSuffix(".md") { found.append("docs/" + name) }
            }
            pages += found.sorted()
        }
        return pages
    }

    static func all() throws -> [Snippet] {
        try pages().flatMap { page in
            let text = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
            return try parse(text, page: page)
        }
    }

    struct MarkError: Error, CustomStringConvertible {
        let description: String
    }

    /// The Swift blocks of one page's text.
    static func parse(_ text: String, page: String) throws -> [Snippet] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var snippets: [Snippet] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed == "```swift" else {
                index += 1
                continue
            }
            let indent = line.prefix { $0 == " " }.count
            var body: [String] = []
            var end = index + 1
            while end < lines.count, lines[end].trimmingCharacters(in: .whitespaces) != "```" {
                body.append(String(lines[end].dropFirst(min(indent, lines[end].prefix { $0 == " " }.count))))
                end += 1
            }
            guard end < lines.count else { throw MarkError(description: "\(page):\(index + 1): a ```swift block is never closed") }
            let kind = try mark(before: index, in: lines, page: page)
            snippets.append(Snippet(page: page, fenceLine: index + 1, kind: kind, code: body.joined(separator: "\n") + "\n"))
            index = end + 1
        }
        return snippets
    }

    /// The kind a `<!-- snippet: … -->` mark on the line before the fence gives; no mark: a whole file.
    static func mark(before fence: Int, in lines: [String], page: String) throws -> Kind {
        guard fence > 0 else { return .file }
        let previous = lines[fence - 1].trimmingCharacters(in: .whitespaces)
        guard previous.hasPrefix("<!--"), previous.contains("snippet:") else { return .file }
        guard previous.hasSuffix("-->"), let colon = previous.range(of: "snippet:") else {
            throw MarkError(description: "\(page):\(fence): a snippet mark is written <!-- snippet: … --> on one line")
        }
        var words = previous[colon.upperBound...].dropLast(3).trimmingCharacters(in: .whitespaces)
        if words == "main" { return .main }
        var mainActor = false
        if words.hasPrefix("@MainActor") {
            mainActor = true
            words = words.dropFirst("@MainActor".count).trimmingCharacters(in: .whitespaces)
        }
        if words == "body" { return .body(parameters: "", mainActor: mainActor) }
        if words.hasPrefix("body("), words.hasSuffix(")") {
            return .body(parameters: String(words.dropFirst(5).dropLast()), mainActor: mainActor)
        }
        throw MarkError(
            description: "\(page):\(fence): unknown snippet mark '\(words)': say main, body, body(PARAMETERS) or "
                + "@MainActor body(PARAMETERS)")
    }

    /// The Swift file to type-check: `#sourceLocation` lines make the compiler name the page and its lines.
    func source() -> String {
        let path = Snippet.root.appendingPathComponent(page).path
        func at(_ line: Int) -> String { "#sourceLocation(file: \"\(path)\", line: \(line))\n" }
        let lines = code.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        switch kind {
        case .file, .main:
            return at(fenceLine + 1) + code
        case .body(let parameters, let mainActor):
            // The leading `import` lines (and blank or comment lines among them) stay at file level; one
            // `#sourceLocation` then maps the statements (a directive between the lines of one statement would break
            // it).
            var leading = 0
            while leading < lines.count {
                let line = lines[leading].trimmingCharacters(in: .whitespaces)
                guard line.isEmpty || line.hasPrefix("//") || line.hasPrefix("import ") || line.hasPrefix("@testable import ")
                else { break }
                leading += 1
            }
            let imports = at(fenceLine + 1) + lines[..<leading].joined(separator: "\n") + "\n"
            let statements = at(fenceLine + 1 + leading) + lines[leading...].joined(separator: "\n") + "\n"
            return imports + "#sourceLocation()\n" + (mainActor ? "@MainActor " : "")
                + "func snippet(\(parameters)) async throws {\n" + statements + "#sourceLocation()\n}\n"
        }
    }
}

/// Runs `swiftc -typecheck` on snippets with the package's module search paths.
final class SnippetChecker: Sendable {
    static let shared = SnippetChecker()

    struct Result: Sendable {
        let status: Int32
        let output: String
    }

    func typeCheck(_ snippet: Snippet) async throws -> Result {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rsup-snippet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent(snippet.kind == .main ? "main.swift" : "snippet.swift")
        try snippet.source().write(to: file, atomically: true, encoding: .utf8)
        var arguments = ["-typecheck", "-swift-version", "6", "-module-name", "Snippet"]
        if snippet.kind != .main { arguments.append("-parse-as-library") }
        arguments += try Self.searchPaths()
        arguments.append(file.path)
        return try await run(try Self.compiler(), arguments, in: folder)
    }

    /// `swiftc`: `$SWIFTC`, or the first on `PATH`.
    static func compiler() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let given = environment["SWIFTC"], !given.isEmpty { return given }
        for folder in (environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = "\(folder)/swiftc"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw Snippet.MarkError(description: "no swiftc on PATH (set SWIFTC)")
    }

    /// `-I` for the built modules (the folder of the running test binary, `Modules/` in it when there is one), for
    /// every folder under Sources/ holding a module map, and `-Xcc -I` for each `pkgConfig:` library of Package.swift.
    static func searchPaths() throws -> [String] {
        var paths: [String] = []
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var modules = binary.deletingLastPathComponent()
        let environment = ProcessInfo.processInfo.environment
        if let given = environment["RSUP_SNIPPET_MODULES"], !given.isEmpty {
            modules = URL(fileURLWithPath: given)
        } else if FileManager.default.fileExists(atPath: modules.appendingPathComponent("Modules").path) {
            modules = modules.appendingPathComponent("Modules")
        }
        let built = (try? FileManager.default.contentsOfDirectory(atPath: modules.path)) ?? []
        guard built.contains(where: { $0.hasSuffix(".swiftmodule") }) else {
            throw Snippet.MarkError(description: "no built Swift modules in \(modules.path) (set RSUP_SNIPPET_MODULES)")
        }
        paths += ["-I", modules.path]
        let sources = Snippet.root.appendingPathComponent("Sources")
        if let walker = FileManager.default.enumerator(atPath: sources.path) {
            var folders: [String] = []
            while let name = walker.nextObject() as? String {
                if (name as NSString).lastPathComponent == "module.modulemap" {
                    folders.append(sources.appendingPathComponent((name as NSString).deletingLastPathComponent).path)
                }
            }
            for folder in folders.sorted() { paths += ["-I", folder] }
        }
        let manifest = try String(contentsOf: Snippet.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for library in manifest.matches(of: /pkgConfig:\s*"([^"]+)"/).map({ String($0.1) }) {
            let flags = (try? runSync("/usr/bin/env", ["pkg-config", "--cflags-only-I", library])) ?? ""
            for flag in flags.split(separator: " ") where flag.hasPrefix("-I") { paths += ["-Xcc", String(flag)] }
        }
        return paths
    }

    /// A short command's standard output (pkg-config).
    static func runSync(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0
            ? String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
    }

    /// Runs the compiler with its output in a file (no pipe to fill), waiting without holding a thread.
    func run(_ executable: String, _ arguments: [String], in folder: URL) async throws -> Result {
        let log = folder.appendingPathComponent("swiftc.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = folder
        process.standardOutput = handle
        process.standardError = handle
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return Result(status: status, output: output)
    }
}
