import Foundation
import SupportHTTP
import SupportUtilities

/// The web console's files (HTML, CSS, JavaScript; Sources/SupporterREST/Console), read into memory once: served at
/// `/` (index.html) and `/<name>`. Nothing else on disk is reachable: a path is looked up by exact name, never joined
/// to a folder.
struct ConsoleFiles: Sendable {
    private var files: [String: (type: String, bytes: [UInt8])] = [:]

    /// Reads the bundled files; empty when they cannot be found (the API still works; `/` answers 404).
    init() {
        guard let folder = Bundle.module.url(forResource: "Console", withExtension: nil),
            let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path)
        else { return }
        for name in names {
            let type: String
            switch (name as NSString).pathExtension {
            case "html": type = "text/html; charset=utf-8"
            case "css": type = "text/css; charset=utf-8"
            case "js": type = "text/javascript; charset=utf-8"
            case "png": type = "image/png"
            case "svg": type = "image/svg+xml"
            default: continue
            }
            guard let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) else { continue }
            files[name] = (type, Array(data))
        }
    }

    var isEmpty: Bool { files.isEmpty }

    /// The answer to `GET path` (a path outside `/api/`), or nil when there is no such file.
    func response(for path: String) -> HTTPResponse? {
        let name = path == "/" || path == "/index.html" ? "index.html" : String(path.dropFirst())
        guard !name.contains("/"), let file = files[name] else { return nil }
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": file.type, "Cache-Control": "no-cache"], body: file.bytes)
    }
}
