import DeviceNode
import Foundation
import TestSupport
import Testing
import SupportWire

/// Strings from the wire or the store reach a terminal or a log escaped (SPEC §4.2): no raw control character, no
/// forged line, in either CLI.
@Suite("terminal escaping", .serialized)
struct TerminalEscapingTests {
    /// A device name that tries to forge a log line, recolour the terminal, hide a NUL and start a C1 CSI.
    static let hostileName = "x\n2026-01-01 INFO forged\u{1B}[31m\u{0}\u{9B}"
    /// `hostileName` as SPEC §4.2 writes it.
    static let escapedHostileName = #"x\n2026-01-01 INFO forged\x1B[31m\x00\x9B"#

    /// Whether `line` holds a code point SPEC §4.2 escapes (the backslash aside): written out here, not taken from the
    /// code under test.
    static func hasRawControl(_ line: String) -> Bool {
        line.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
                true
            default: false
            }
        }
    }

    /// Expects that no line holds a raw control and none starts where the forged line would.
    static func expectClean(_ lines: [String], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for line in lines {
            #expect(!hasRawControl(line), "\(what): raw control in \(Array(line.unicodeScalars))",
                sourceLocation: sourceLocation)
            #expect(!line.hasPrefix("2026-01-01"), "\(what): forged line: \(line)", sourceLocation: sourceLocation)
        }
    }

    /// Joins `code` from this process with `DeviceNode`: the CLI cannot send the name, as no argument holds a NUL.
    static func joinAsDevice(
        _ server: SupporterServer, _ certificates: TestCertificates, code: String, token: String, name: String
    ) throws -> (DeviceNode, DeviceSession) {
        var configuration = DeviceConfiguration(
            host: "127.0.0.1", port: UInt16(server.port),
            tls: .makeClientConfiguration(trustRoots: .file(certificates.caPath)), apiToken: token, deviceName: name)
        // A loaded machine may take longer than the SDK's 10 s for TCP + TLS + HELLO; this test is about escaping.
        configuration.connectTimeout = .seconds(60)
        let node = try DeviceNode(configuration: configuration)
        return (node, try node.connect(toSessionCode: code))
    }

    /// Runs `command` until one of its stdout lines satisfies `matching` (the audit trail is written a moment after
    /// the event), or `patience` runs out.
    static func commandUntil(_ arguments: [String], _ matching: (String) -> Bool) async throws -> CommandResult {
        let found = try? await retrying("a matching line from \(arguments)") { () async throws -> CommandResult in
            let result = try await runCommand(Binaries.supporter, arguments)
            guard result.stdout.contains(where: matching) else { throw WaitTimeout(description: "\(result)") }
            return result
        }
        if let found { return found }
        return try await runCommand(Binaries.supporter, arguments)
    }

    @Test("a hostile device name reaches the supporter's console, log, list and audit escaped, one line each")
    func hostileDeviceNameIsEscapedForPeople() async throws {
        try await withCertificates { certificates in
            let server = try await SupporterServer(
                certificate: certificates.server, extra: ["--log-level", "debug"], json: false)
            do {
                let token = try await server.issueToken()
                let code = try await server.createCode()
                let (node, session) = try Self.joinAsDevice(
                    server, certificates, code: code, token: token, name: Self.hostileName)
                let online = await server.process.waitForLine { $0.contains("\(code): device online") }
                #expect(
                    online?.hasSuffix("device online (\(Self.escapedHostileName))") == true,
                    "\(server.process.transcript)")
                let list = try await runCommand(Binaries.supporter, ["list", "--data", server.data])
                let audit = try await Self.commandUntil(["audit", "--data", server.data]) {
                    $0.contains("device_online")
                }
                session.leave()
                withExtendedLifetime(node) {}
                await server.close()

                let log = server.process.stderrLines
                #expect(
                    log.contains { $0.contains("online: device '\(Self.escapedHostileName)'") },
                    "\(server.process.transcript)")
                #expect(
                    log.contains { $0.contains("device '\(Self.escapedHostileName)' connected from") },
                    "\(server.process.transcript)")
                Self.expectClean(server.process.stdoutLines, "console")
                Self.expectClean(log, "log")

                #expect(list.exitCode == 0, "\(list)")
                #expect(list.stdout.contains { $0.contains("device: \(Self.escapedHostileName)") }, "\(list)")
                Self.expectClean(list.stdout + list.stderr, "list")

                #expect(audit.exitCode == 0, "\(audit)")
                #expect(
                    audit.stdout.contains {
                        $0.contains("device_online") && $0.contains("device=\(Self.escapedHostileName)")
                    },
                    "\(audit)")
                Self.expectClean(audit.stdout + audit.stderr, "audit")
            } catch {
                await server.close()
                throw error
            }
        }
    }

    @Test("--log-format json: every stderr line is one JSON object (time, level, component, message), a hostile name escaped once")
    func logLinesAsJSONStayOneObjectPerLine() async throws {
        try await withCertificates { certificates in
            let server = try await SupporterServer(
                certificate: certificates.server, extra: ["--log-format", "json", "--log-level", "info"])
            do {
                let token = try await server.issueToken()
                let code = try await server.createCode()
                let (node, session) = try Self.joinAsDevice(
                    server, certificates, code: code, token: token, name: Self.hostileName)
                #expect(await server.waitForEvent("device_online", code: code) != nil, "\(server.process.transcript)")
                let online = await server.process.waitForErrorLine { $0.contains("online: device") }
                #expect(online != nil, "\(server.process.transcript)")
                session.leave()
                withExtendedLifetime(node) {}
                let lines = server.process.stderrLines
                #expect(!lines.isEmpty)
                for line in lines {
                    let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    #expect(object.map { Set($0.keys) } == ["time", "level", "component", "message"], "\(line)")
                    #expect(!Self.hasRawControl(line), "raw control in a JSON log line: \(Array(line.unicodeScalars))")
                }
                // The message is the text line's message: the name escaped as SPEC §4.2 writes it.
                let messages = lines.compactMap {
                    (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["message"] as? String
                }
                #expect(
                    messages.contains { $0.contains("online: device '\(Self.escapedHostileName)'") }, "\(messages)")
                await server.close()
            } catch {
                await server.close()
                throw error
            }
        }
    }

    @Test("with --json a hostile device name keeps every character, and JSON escapes every control (C0 and C1 too)")
    func hostileDeviceNameRoundTripsInJSON() async throws {
        try await withSupporter { certificates, server in
            let token = try await server.issueToken()
            let code = try await server.createCode()
            let (node, session) = try Self.joinAsDevice(
                server, certificates, code: code, token: token, name: Self.hostileName)
            let online = await server.waitForEvent("device_online", code: code)
            #expect(online?["device"] as? String == Self.hostileName, "\(server.process.transcript)")
            let audit = try await Self.commandUntil(["audit", "--data", server.data, "--json"]) {
                $0.contains("device_online")
            }
            session.leave()
            withExtendedLifetime(node) {}

            let details = audit.stdout.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.first { $0["kind"] as? String == "device_online" }?["details"] as? [String: Any]
            #expect(details?["device"] as? String == Self.hostileName, "\(audit)")
            for line in server.process.stdoutLines + audit.stdout {
                #expect(!Self.hasRawControl(line), "raw control in JSON: \(Array(line.unicodeScalars))")
            }
        }
    }

    @Test("the device CLI shows a hostile waiting message and supporter name escaped")
    func deviceShowsHostileTextEscaped() async throws {
        try await withSupporter { certificates, server in
            let token = try await server.issueToken()
            let waiting = "please wait\n2026-01-01 INFO forged\u{1B}[2J\u{9B}\u{202E}"
            let reply = try await server.control(["create", "--type", "remote", "--waiting-message", waiting])
            let code = try #require((reply["code"] as? [String: Any])?["code"] as? String)
            let device = try CLIProcess(
                Binaries.device,
                [
                    "connect", server.address, "--code", code, "--token", token, "--name", "cli-test-device",
                    "--auto-reject", "--ca", certificates.caPath,
                ])
            let online = await device.waitForLine { $0.contains("session code online") }
            #expect(
                online?.hasSuffix(#"— please wait\n2026-01-01 INFO forged\x1B[2J\x9B\u{202E}"#) == true,
                "\(device.transcript)")

            // A display name cannot hold control characters (the node refuses them), but line and paragraph
            // separators and bidirectional overrides are not controls: the device still escapes them.
            let supporterName = "Eve\u{2028}2026-01-01 INFO forged\u{202E}"
            _ = try await server.connect(code, as: "eve", displayName: supporterName)
            let request = await device.waitForLine { $0.contains("asks to connect") }
            #expect(
                request?.contains(#"supporter 'Eve\u{2028}2026-01-01 INFO forged\u{202E}' asks to connect"#)
                    == true, "\(device.transcript)")
            _ = await server.waitForEvent("rejected", code: code)
            await device.stop()

            Self.expectClean(device.stdoutLines, "device stdout")
            Self.expectClean(device.stderrLines, "device stderr")
        }
    }
}
