import Foundation
import Testing
import TestSupport

/// Issue 23: SIGHUP re-reads the certificate and key files (it used to kill the node with exit 129). New connections
/// get the new identity, established sessions are untouched, and a broken file leaves the node serving with the old
/// one.
@Suite("certificate reload on SIGHUP") struct CertificateReloadTests {
    /// Copies `certificate`'s files over the paths the node was started with.
    private func install(_ certificate: CertificateFile, at live: (certificate: String, key: String)) throws {
        for (from, to) in [(certificate.certificatePath, live.certificate), (certificate.keyPath, live.key)] {
            try? FileManager.default.removeItem(atPath: to)
            try FileManager.default.copyItem(atPath: from, toPath: to)
        }
    }

    @Test("SIGHUP with a new certificate: the active session goes on, a new device sees the new key; a broken key is refused and the node keeps serving")
    func sighupRotatesTheCertificateForNewConnectionsOnly() async throws {
        try await withCertificates { certificates in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let live = (certificate: folder.file("live.pem"), key: folder.file("live.key"))
            try install(certificates.server, at: live)
            let rotated = try certificates.issueCertificate(name: "rotated")
            let server = try await SupporterServer(
                certificate: CertificateFile(
                    certificatePath: live.certificate, keyPath: live.key, spkiSHA256: certificates.server.spkiSHA256),
                extra: ["--api-listen", "127.0.0.1:0"])
            do {
                let token = try await server.issueToken()
                // A device in an active session, trusting the first key by its pin.
                let code = try await server.createCode()
                let first = try server.startDevice(
                    code: code, token: token, trust: ["--pin", pin(certificates.server)], extra: ["--auto-accept"])
                _ = try #require(await first.waitForEvent("online"), "\(first.transcript)")
                _ = try await server.connect(code)
                _ = try #require(await first.waitForEvent("connected"), "\(first.transcript)")

                try install(rotated, at: live)
                server.process.signal(SIGHUP)
                _ = try #require(await server.process.waitForEvent("reloaded"), "\(server.process.transcript)")

                // A new device pinned to the new key gets in; one pinned to the old key does not.
                let second = try await server.createCode()
                let pinnedNew = try server.startDevice(
                    code: second, token: token, trust: ["--pin", pin(rotated)], extra: ["--auto-accept"])
                _ = try #require(await pinnedNew.waitForEvent("online"), "\(pinnedNew.transcript)")
                let third = try await server.createCode()
                let pinnedOld = try server.startDevice(code: third, token: token, trust: ["--pin", pin(certificates.server)])
                #expect(await pinnedOld.waitForExit() != 0, "\(pinnedOld.transcript)")
                #expect(
                    pinnedOld.transcript.contains("pin"), "the refusal names the pin\n\(pinnedOld.transcript)")

                // The session that was active before the rotation still is: the supporter ends it, the device hears it.
                _ = try await server.control(["end", "--code", code])
                _ = try #require(await first.waitForEvent("disconnected"), "\(first.transcript)")

                // A broken key: the node says so and keeps the rotated identity.
                try? FileManager.default.removeItem(atPath: live.key)
                try FileManager.default.copyItem(atPath: certificates.garbagePEMPath, toPath: live.key)
                server.process.signal(SIGHUP)
                let failed = try #require(
                    await server.process.waitForEvent("reload_failed"), "\(server.process.transcript)")
                #expect((failed["error"] as? String)?.contains("live.key") == true, "\(failed)")
                let fourth = try await server.createCode()
                let afterFailure = try server.startDevice(
                    code: fourth, token: token, trust: ["--pin", pin(rotated)], extra: ["--auto-accept"])
                _ = try #require(await afterFailure.waitForEvent("online"), "\(afterFailure.transcript)")
                // Still running: a clean stop exits 0.
                server.process.signal(SIGTERM)
                #expect(await server.process.waitForExit() == 0, "\(server.process.transcript)")
                await server.close()
            } catch {
                await server.close()
                throw error
            }
        }
    }
}
