import Foundation
import Testing
import TestSupport

/// Issue 23: `serve --config FILE`, `RSUP_*` variables, `config check` and `config show`. Every option round-trips
/// through the file; the command line beats the environment, which beats the file, which beats the defaults; each kind
/// of bad file is refused with the key and the line.
@Suite("configuration file") struct ConfigurationFileTests {
    /// `config show FILE --json` (with `environment` set), as name → (value, from).
    private func show(_ file: String, _ extra: [String] = [], environment: [String] = []) async throws
        -> [String: (value: String, from: String)]
    {
        let result = try await runCommand(
            "/usr/bin/env", environment + [Binaries.supporter, "config", "show", file, "--json"] + extra)
        #expect(result.exitCode == 0, "\(result)")
        let object = try #require(
            result.stdout.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] },
            "\(result)")
        var shown: [String: (value: String, from: String)] = [:]
        for (name, entry) in object {
            guard let entry = entry as? [String: String] else { continue }
            shown[name] = (entry["value"] ?? "", entry["from"] ?? "")
        }
        return shown
    }

    @Test("every serve option round-trips through the file, secrets masked; config check accepts a whole file")
    func everyOptionRoundTrips() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tokenFile = folder.file("token")
            try Data("rsk_0123456789abcdefghijklmnop\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
            let values: [(String, String)] = [
                ("listen", "127.0.0.1:0"), ("api-listen", "127.0.0.1:0"), ("trusted-proxy", "10.0.0.5"),
                ("cert", certificates.server.certificatePath), ("key", certificates.server.keyPath),
                ("data", folder.file("data")), ("api-token-file", tokenFile), ("keepalive", "20s"),
                ("request-timeout", "60s"), ("log-level", "info"), ("log-format", "json"), ("resume-grace", "40s"),
                ("protocol", "1.1"), ("non-interactive", "true"), ("json", "true"),
                ("metrics-allow", "10.0.0.0/8"), ("metrics-token-file", tokenFile),
            ]
            let file = folder.file("serve.conf")
            let text = "# every option\n\n" + values.map { "\($0.0) = \($0.1)" }.joined(separator: "\n") + "\n"
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let shown = try await show(file)
            for (index, (name, value)) in values.enumerated() {
                #expect(shown[name]?.value == value, "\(name): \(String(describing: shown[name]))")
                // `config show --json` gives `json` on its own command line, which wins over the file's.
                let from = name == "json" ? "the command line" : "\(file) line \(index + 3)"
                #expect(shown[name]?.from == from, "\(name): \(String(describing: shown[name]))")
            }
            let check = try await supporter("config", "check", file)
            #expect(check.exitCode == 0, "\(check)")
            #expect(check.stdout == ["\(file): ok"], "\(check)")

            // The options a file cannot hold together with the above (one token source; PostgreSQL only options).
            let others = folder.file("others.conf")
            try """
                api-token = rsk_0123456789abcdefghijklmnop
                store = postgres://rsup:hunter2@db.example/rsup
                presence-lease = 5s
                metrics-token = metrics-0123456789abcdef
                """.write(toFile: others, atomically: true, encoding: .utf8)
            let secret = try await show(others)
            #expect(secret["api-token"]?.value == "(secret, 30 characters)", "\(String(describing: secret["api-token"]))")
            #expect(secret["store"]?.value.contains("hunter2") == false, "\(String(describing: secret["store"]))")
            #expect(secret["presence-lease"]?.value == "5s")
            #expect(secret["metrics-token"]?.value == "(secret, 24 characters)")
        }
    }

    @Test("the command line beats RSUP_* variables, which beat the file, which beats the default")
    func precedence() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let file = folder.file("serve.conf")
        try "keepalive = 20s\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try await show(file)["keepalive"]?.value == "20s")
        let fromEnvironment = try await show(file, environment: ["RSUP_KEEPALIVE=25s"])["keepalive"]
        #expect(fromEnvironment?.value == "25s" && fromEnvironment?.from == "the environment (RSUP_KEEPALIVE)")
        let fromFlag = try await show(file, ["--keepalive", "30s"], environment: ["RSUP_KEEPALIVE=25s"])["keepalive"]
        #expect(fromFlag?.value == "30s" && fromFlag?.from == "the command line")
        try "# nothing\n".write(toFile: file, atomically: true, encoding: .utf8)
        let fallback = try await show(file)["keepalive"]
        #expect(fallback?.value == "15s" && fallback?.from == "default")
    }

    @Test(
        "a bad file is refused with the key and the line",
        arguments: [
            ("listen = 127.0.0.1:0\nbogus = 1\n", "line 2: unknown key 'bogus'"),
            ("keepalive = 20s\nkeepalive = 30s\n", "line 2: 'keepalive' is given twice (first on line 1)"),
            ("keepalive 20s\n", "line 1: expected 'name = value'"),
            ("json = yes\n", "line 1: 'json' is true or false"),
            ("keepalive =\n", "line 1: 'keepalive' has no value"),
            ("cert = a.pem\nkey = a.key\nkeepalive = 500s\n", "--keepalive takes 1s to 120s"),
            ("cert = a.pem\nkey = a.key\nprotocol = 2.0\n", "line 3"),
            ("cert = a.pem\nkey = a.key\nmetrics-allow = 10.0.0.0/33\napi-listen = 127.0.0.1:0\n",
             "--metrics-allow takes an address or a network"),
            ("cert = a.pem\nkey = a.key\nmetrics-token = short\napi-listen = 127.0.0.1:0\n",
             "--metrics-token: a metrics token has at least 16 characters"),
            ("cert = a.pem\nkey = a.key\nmetrics-allow = 10.0.0.0/8\n", "--metrics-allow needs --api-listen"),
        ])
    func badFilesAreRefused(text: String, words: String) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let file = folder.file("serve.conf")
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await supporter("config", "check", file)
        #expect(check.exitCode == 2, "\(check)")
        #expect(check.stderr.first?.contains(words) == true, "\(check)")
        if words.hasPrefix("--") {
            // A bad value names where it was set.
            #expect(check.stderr.first?.contains("(set in \(file) line 3)") == true, "\(check)")
        }
        // serve refuses the same file the same way, before it listens.
        let serve = try await supporter("serve", "--config", file)
        #expect(serve.exitCode == 2, "\(serve)")
        #expect(serve.stderr.first?.contains(words) == true, "\(serve)")
    }

    @Test("config check refuses a key that does not match its certificate, and a missing file by name")
    func checkLoadsTheTLSFiles() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let file = folder.file("serve.conf")
            try "cert = \(certificates.server.certificatePath)\nkey = \(certificates.mismatchedKeyPath)\n"
                .write(toFile: file, atomically: true, encoding: .utf8)
            let mismatched = try await supporter("config", "check", file)
            #expect(mismatched.exitCode == 1, "\(mismatched)")
            let missing = try await supporter("config", "check", folder.file("absent.conf"))
            #expect(missing.exitCode == 2, "\(missing)")
            #expect(missing.stderr.first?.contains("absent.conf") == true, "\(missing)")
        }
    }

    @Test("deploy/serve.conf, the unit file's configuration, holds only keys serve knows")
    func theShippedFileIsValid() async throws {
        let shipped = ServiceManagerTests.unitFile.replacingOccurrences(of: "rsup-supporter.service", with: "serve.conf")
        let shown = try await show(shipped)
        #expect(shown["cert"]?.value == "/etc/rsup-supporter/supporter.pem", "\(shown)")
        #expect(shown["listen"]?.from.hasSuffix("serve.conf line 7") == true, "\(String(describing: shown["listen"]))")
    }

    @Test("serve --config FILE serves with the file's options")
    func serveUsesTheFile() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let file = folder.file("serve.conf")
            try """
                listen = 127.0.0.1:0
                cert = \(certificates.server.certificatePath)
                key = \(certificates.server.keyPath)
                data = \(folder.file("data"))
                non-interactive = true
                json = true
                """.write(toFile: file, atomically: true, encoding: .utf8)
            let process = try CLIProcess(Binaries.supporter, ["serve", "--config", file])
            // `json = true` from the file: the listening event is a JSON line.
            let listening = await process.waitForEvent("listening")
            #expect(listening?["port"] as? Int != nil, "\(process.transcript)")
            process.signal(SIGTERM)
            #expect(await process.waitForExit() == 0, "\(process.transcript)")
        }
    }
}
