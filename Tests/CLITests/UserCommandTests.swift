import Foundation
import TestSupport
import Testing
import DeviceNode
import SupportWire

/// `rsup-supporter user …` against a running node: accounts added, listed, changed, and refused with clear errors.
@Suite("user commands", .serialized)
struct UserCommandTests {
    @Test("add, list, rename, role, passwd, disable and enable; every change is audited with what changed")
    func lifecycle() async throws {
        try await withCertificates { certificates in
            let server = try await SupporterServer(certificate: certificates.server)
            defer { Task { await server.close() } }
            try await server.ensureAccount("root", displayName: "Root", role: "admin")
            try await server.ensureAccount("alice", displayName: "Alice")
            let listed = try await server.control(["user", "list"])
            let users = try #require(listed["users"] as? [[String: Any]])
            #expect(users.compactMap { $0["login"] as? String } == ["alice", "root"])
            #expect(!"\(listed)".contains("scrypt"), "the list shows a password hash")

            let renamed = try await server.control(["user", "rename", "alice", "--display-name", "Alice Martin"])
            #expect((renamed["user"] as? [String: Any])?["display_name"] as? String == "Alice Martin")
            _ = try await server.control(["user", "role", "alice", "admin"])
            _ = try await server.control(["user", "disable", "alice"])
            let disabled = try await server.control(["user", "list"])
            let alice = (disabled["users"] as? [[String: Any]])?.first { $0["login"] as? String == "alice" }
            #expect(alice?["state"] as? String == "disabled" && alice?["role"] as? String == "admin", "\(disabled)")
            _ = try await server.control(["user", "enable", "alice"])
            let passwordFile = server.folder.file("new-password")
            try Data("a brand new password\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
            _ = try await server.control(["user", "passwd", "alice", "--password-file", passwordFile])

            let audit = try await runCommand(Binaries.supporter, ["audit", "--data", server.data, "--json"])
            let changes = audit.stdout.filter { $0.contains(#""account_changed""#) }
            #expect(changes.count == 5, "\(audit)")
            #expect(changes.contains { $0.contains(#""changed":"password""#) }, "\(changes)")
            #expect(!audit.stdout.joined().contains("brand new password"), "a password reached the audit trail")
        }
    }

    @Test("bad logins, short passwords, duplicates, unknown accounts and the last admin are refused with what was wrong")
    func refusals() async throws {
        try await withCertificates { certificates in
            let server = try await SupporterServer(certificate: certificates.server)
            defer { Task { await server.close() } }
            try await server.ensureAccount("root", displayName: "Root", role: "admin")
            let short = server.folder.file("short")
            try Data("tiny\n".utf8).write(to: URL(fileURLWithPath: short))
            let good = server.folder.file("good")
            try Data("long enough password\n".utf8).write(to: URL(fileURLWithPath: good))
            let cases: [([String], String)] = [
                (["user", "add", "Bad Login", "--display-name", "X", "--password-file", good], "a login has 1 to 64"),
                (["user", "add", "eve", "--display-name", "X", "--password-file", short], "10 to 1024 bytes"),
                (["user", "add", "eve", "--display-name", "\u{1B}[31mred", "--password-file", good], "no control characters"),
                (["user", "add", "root", "--display-name", "X", "--password-file", good], "exists"),
                (["user", "add", "eve", "--display-name", "X"], "--password-file"),
                (["user", "disable", "nobody"], "no account has the login 'nobody'"),
                (["user", "disable", "root"], "last active admin"),
                (["user", "role", "root", "king"], "supporter|admin"),
                (["connect", "--code", "123-456-789", "--as", "nobody"], "no active supporter account 'nobody'"),
            ]
            for (arguments, message) in cases {
                let result = try await runCommand(Binaries.supporter, arguments + ["--data", server.data])
                #expect(result.exitCode != 0 && "\(result)".contains(message), "\(arguments): \(result)")
            }
        }
    }
}
