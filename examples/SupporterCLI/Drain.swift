import CLIKit
import Foundation

/// `rsup-supporter drain`: stops the node serving `--data` as SIGTERM does, and waits until it has stopped.
enum Drain {
    static let usage = """
        usage: rsup-supporter drain [--data DIR] [--json]

        Stops the node serving DIR (its control socket) and waits until it has stopped. A node of a cluster (several
        nodes on one PostgreSQL database) hands each session that can resume over to the other nodes first: the
        devices resume there and no session ends (SPEC §15.5 "Drain", docs/cluster.md). A node alone hands them
        over to its next start on the same data: its devices redial until it is back and resume there, within their
        resume grace. Sessions without session_resume (1.0 devices) end with going_away. The same as SIGTERM or the
        console's quit; for a rolling upgrade, drain one node, start its new version, then the next.
        """

    /// How long to wait for the node to stop: its own stop limit (4 s) and a margin.
    static let patience: Duration = .seconds(6)

    static func run(_ arguments: [String]) throws(CLIError) {
        let parsed = try ParsedArguments(arguments, valueOptions: ["data"], flagOptions: ["json"])
        if parsed.has("help") {
            print(usage)
            return
        }
        guard parsed.positionals.isEmpty else { throw .usage("unexpected argument '\(parsed.positionals[0])'") }
        let socket = (parsed.options["data"] ?? "supporter-data") + "/control.sock"
        let reply = try ControlSocket.request(path: socket, ["command": "drain"])
        guard reply["ok"] as? Bool == true else { throw .failure(reply["error"] as? String ?? "the command failed") }
        let handsOver = reply["hands_over"] as? Bool == true
        let toOthers = reply["to"] as? String == "other_nodes"
        // `serve` removes its control socket as the last step of its stop.
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        while FileManager.default.fileExists(atPath: socket), clock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        guard !FileManager.default.fileExists(atPath: socket) else {
            throw .failure("the node was asked to stop but has not stopped within \(patience)")
        }
        let console = Console(json: parsed.has("json"))
        if console.json {
            console.line(
                Console.encode(
                    ["ok": true, "hands_over": handsOver, "to": toOthers ? "other_nodes" : "next_start", "stopped": true]))
        } else {
            console.line(
                !handsOver
                    ? "stopped: its sessions ended with going_away"
                    : toOthers
                        ? "stopped: the sessions that could resume were handed over to the other nodes"
                        : "stopped: the sessions that could resume wait for this node's next start (their resume grace)")
        }
    }
}
