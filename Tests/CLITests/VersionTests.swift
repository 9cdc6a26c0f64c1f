import Foundation
import Testing

/// Issue 23: `--version` on both CLIs (it was "unknown command"): the release, the protocol, and the C libraries the
/// process runs with, for people and as JSON.
@Suite("--version") struct VersionTests {
    @Test("rsup-supporter --version names the release, the protocol and the OpenSSL, SQLite and libpq it runs with")
    func supporterVersion() async throws {
        let text = try await supporter("--version")
        #expect(text.exitCode == 0, "\(text)")
        #expect(text.stdout.first?.hasPrefix("rsup-supporter 1.") == true, "\(text)")
        for prefix in ["protocol: 1 (", "TLS: OpenSSL 3.", "SQLite: 3.", "libpq: "] {
            #expect(text.stdout.contains { $0.hasPrefix(prefix) }, "no '\(prefix)' line: \(text)")
        }
        let json = try await supporter("--version", "--json")
        let object = try #require(
            json.stdout.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] },
            "\(json)")
        #expect(object["program"] as? String == "rsup-supporter")
        for key in ["version", "protocol", "openssl", "sqlite", "libpq"] {
            #expect(object[key] is String, "no \(key): \(object)")
        }
    }

    @Test("rsup-device --version names the release, the protocol and the OpenSSL it runs with")
    func deviceVersion() async throws {
        let text = try await device("--version")
        #expect(text.exitCode == 0, "\(text)")
        #expect(text.stdout.first?.hasPrefix("rsup-device 1.") == true, "\(text)")
        #expect(text.stdout.contains { $0.hasPrefix("TLS: OpenSSL 3.") }, "\(text)")
        let json = try await device("--version", "--json")
        let object = json.stdout.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(object?["program"] as? String == "rsup-device", "\(json)")
        #expect(object?["openssl"] is String, "\(json)")
    }
}
