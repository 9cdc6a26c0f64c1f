import Foundation

/// A real PostgreSQL server for one test: `scripts/pg-cluster.sh start` in a fresh folder (initdb, a Unix socket and a
/// loopback port, trust for the role `rsup`), stopped and removed by ``stop()``. With `tls`, the server runs with
/// `ssl=on` and presents that certificate on its loopback port (see ``tlsConnectionString(rootCertificate:)``).
public final class ThrowawayPostgres: Sendable {
    /// libpq's connection string for the cluster's database `rsup` (over the Unix socket).
    public let connectionString: String
    /// The loopback port it also listens on.
    public let port: Int
    private let folder: String
    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/pg-cluster.sh").path

    public struct Failure: Error, CustomStringConvertible { public let description: String }

    /// Starts a cluster; throws with the script's message when PostgreSQL cannot be started.
    ///
    /// - Parameter tls: a server certificate (for `localhost`/127.0.0.1, e.g. ``TestCertificates/server``) to turn
    ///   TLS on with; nil for none.
    public init(tls: CertificateFile? = nil) throws {
        folder = NSTemporaryDirectory() + "rsup-pg-\(UUID().uuidString.prefix(8))"
        let output = folder + ".out"
        let options = tls.map { ["--tls", $0.certificatePath, $0.keyPath] } ?? []
        let process = try ChildProcess(
            "/bin/bash", [Self.script, "start", folder] + options, stdout: .file(output), stderr: .sameAsStdout)
        let status = process.waitForExit()
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: output)
        guard status == 0, let line = text.split(separator: "\n").last(where: { $0.hasPrefix("host=") }) else {
            throw Failure(description: "cannot start a throwaway PostgreSQL (scripts/install-deps.sh installs it): \(text)")
        }
        connectionString = String(line)
        port = line.split(separator: " ").first { $0.hasPrefix("port=") }.flatMap { Int($0.dropFirst(5)) } ?? 0
    }

    /// libpq's connection string for the database `rsup` over TLS on the loopback port, checking the server's
    /// certificate against `rootCertificate` and its name against `localhost` (`sslmode=verify-full`).
    public func tlsConnectionString(rootCertificate: String) -> String {
        "host=localhost port=\(port) user=rsup dbname=rsup sslmode=verify-full sslrootcert=\(rootCertificate) connect_timeout=5"
    }

    /// Restarts the server (a crash-like immediate stop, then start), keeping its data.
    public func restart() throws {
        try run(["-c", "bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1); runuser -u postgres -- \"$bin/pg_ctl\" -D \"$0/data\" -m immediate -w restart -o \"-k $0/socket -p \(port) -c listen_addresses=127.0.0.1 -c fsync=off\" >/dev/null", folder])
    }

    /// Stops the server as a crash would (`pg_ctl stop -m immediate`), keeping its data: an outage until
    /// ``startAgain()``.
    public func halt() throws {
        try run(["-c", "bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1); runuser -u postgres -- \"$bin/pg_ctl\" -D \"$0/data\" -m immediate -w stop >/dev/null", folder])
    }

    /// Starts a server stopped by ``halt()`` again, on the same port and socket.
    public func startAgain() throws {
        try run(["-c", "bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1); runuser -u postgres -- \"$bin/pg_ctl\" -D \"$0/data\" -w start -o \"-k $0/socket -p \(port) -c listen_addresses=127.0.0.1 -c fsync=off\" -l \"$0/restart.log\" >/dev/null", folder])
    }

    /// Stops the server and removes its folder.
    public func stop() {
        _ = try? run([Self.script, "stop", folder])
    }

    private func run(_ arguments: [String]) throws {
        let process = try ChildProcess("/bin/bash", arguments)
        guard process.waitForExit() == 0 else { throw Failure(description: "bash \(arguments) failed") }
    }
}
