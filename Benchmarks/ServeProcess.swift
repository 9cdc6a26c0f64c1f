#if canImport(Glibc)
import Glibc
#endif
import Foundation
import CLIKit

/// A supporter node as its own process, the way an operator runs one: `rsup-supporter serve` on a data folder and a
/// port, driven through its control socket (`DATA/control.sock`, the CLI's own channel), and stopped by SIGTERM
/// (the drain of SPEC §15.5) — what `systemctl stop` or a rolling upgrade does. Its stdout (JSON events) and stderr
/// (logs) go to files in the data folder's parent, so a busy node never blocks on a pipe nobody reads.
final class ServeProcess {
    let data: String
    let port: UInt16
    /// The REST API's port, when the node serves it (`--api-listen`).
    let apiPort: UInt16?
    private let process: ChildProcess
    private let outputPath: String

    /// `rsup-supporter` next to this benchmark's own executable (`swift build -c release` builds both), or nil.
    static func binary() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let own = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let candidate = own.split(separator: "/").dropLast().map(String.init).joined(separator: "/") + "/rsup-supporter"
        let path = own.hasPrefix("/") ? "/" + candidate : candidate
        return access(path, X_OK) == 0 ? path : nil
    }

    /// Starts `binary serve` on `data` (created if missing) listening on 127.0.0.1:`port` (0: any) with the
    /// certificates in `certificates`, plus `extra` options; waits up to `timeout` for its `listening` event. Nil
    /// when it exits or stays silent; the reason is in `data`'s `.err` file.
    init?(
        binary: String, data: String, port: UInt16, certificates: String, extra: [String],
        timeout: Duration = .seconds(60)
    ) {
        self.data = data
        outputPath = data + ".out"
        let arguments =
            [
                "serve", "--listen", "127.0.0.1:\(port)", "--non-interactive", "--json", "--data", data,
                "--cert", certificates + "/supporter.pem", "--key", certificates + "/supporter.key",
            ] + extra
        // A restart's output must not be read from the previous process's file (its `listening` line).
        unlink(outputPath)
        unlink(outputPath + ".err")
        // `exec` keeps the pid the node's own, so that SIGTERM reaches it and not a shell.
        let script = "out=$1; shift; exec \"$@\" >\"$out\" 2>\"$out.err\""
        guard
            let process = ChildProcess(
                "/bin/sh", ["sh", "-c", script, "sh", outputPath, binary] + arguments, captureOutput: false)
        else { return nil }
        self.process = process
        let deadline = ContinuousClock.now + timeout
        var found: (port: UInt16, api: UInt16?)?
        while found == nil, ContinuousClock.now < deadline {
            found = Self.listeningPorts(in: outputPath)
            if found == nil {
                if process.hasExited { return nil }
                ProcessInfoLite.sleep(.milliseconds(10))
            }
        }
        guard let found else {
            process.signal(SIGKILL)
            _ = process.wait()
            return nil
        }
        self.port = found.port
        self.apiPort = found.api
    }

    /// The ports of the first `listening` event in the node's JSON output: the device port, and the API's if any.
    private static func listeningPorts(in path: String) -> (port: UInt16, api: UInt16?)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["event"] as? String == "listening", let port = object["port"] as? Int
            else { continue }
            return (UInt16(clamping: port), (object["api_port"] as? Int).map { UInt16(clamping: $0) })
        }
        return nil
    }

    /// One control command (`["command": "list"]`, …); nil when the node does not answer or answers `ok: false`.
    func control(_ request: [String: Any]) -> [String: Any]? {
        guard let reply = try? ControlSocket.request(path: data + "/control.sock", request),
            reply["ok"] as? Bool == true
        else { return nil }
        return reply
    }

    /// SIGTERM, then waits for the exit; returns the exit status (0 after a clean drain).
    @discardableResult
    func terminate() -> Int32 {
        process.signal(SIGTERM)
        return process.wait()
    }

    /// SIGKILL and wait: for a benchmark that gives up.
    func kill() {
        process.signal(SIGKILL)
        _ = process.wait()
    }
}
