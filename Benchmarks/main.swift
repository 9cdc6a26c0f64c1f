// RemoteSupport benchmarks: `swift run -c release Benchmarks [group ...] [--min-time S] [--repeats N]`.
//
// Each group is a subcommand; with no group every group runs. Results are plain-text tables; nothing is asserted.

#if canImport(Glibc)
import Glibc
#endif

/// Every benchmark group, in the order they run. New groups (TLS, node) are added here.
let groups: [BenchmarkGroup] = [
    WireBenchmark.group,
    TLSBenchmark.group,
    NodesBenchmark.group,
    AbuseBenchmark.group,
    RESTAbuseBenchmark.group,
    NodeCostBenchmark.group,
    ClusterBenchmark.group,
    RollingRestartBenchmark.group,
    ChatBenchmark.group,
]

// Hidden subcommand: the client-side child process of the `tls` group's idle-connection measurement.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == IdleConnectionsBenchmark.subcommand {
    IdleConnectionsBenchmark.childMain(Array(CommandLine.arguments.dropFirst(2)))
}
// Hidden subcommand: the device-side child process of the `nodes` group.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == NodesBenchmark.subcommand {
    NodesBenchmark.childMain(Array(CommandLine.arguments.dropFirst(2)))
}
// Hidden subcommand: the attackers and the legitimate device of the `abuse` group.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == AbuseBenchmark.subcommand {
    AbuseBenchmark.childMain(Array(CommandLine.arguments.dropFirst(2)))
}
// Hidden subcommand: the attackers and the legitimate client of the `abuse-rest` group.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == RESTAbuseBenchmark.subcommand {
    RESTAbuseBenchmark.childMain(Array(CommandLine.arguments.dropFirst(2)))
}

// Hidden subcommand: the device-side child process of the `rolling` group.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == RollingRestartBenchmark.subcommand {
    RollingRestartBenchmark.childMain(Array(CommandLine.arguments.dropFirst(2)))
}
// Hidden subcommand: the devices and REST client of the `chat` group.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == ChatBenchmark.subcommand {
    ChatBenchmark.childMain(Array(CommandLine.arguments.dropFirst(2)))
}
// Hidden subcommand: the load generator child process of the `nodecost` group.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == NodeCostBenchmark.subcommand {
    NodeCostBenchmark.childMain(Array(CommandLine.arguments.dropFirst(2)))
}

func usage() -> String {
    let nameWidth = groups.map(\.name.count).max() ?? 0
    var text = """
        USAGE: Benchmarks [<group> ...] [--min-time <seconds>] [--repeats <n>]

        Runs the named benchmark groups, or every group when none is named. Build in release mode:
          swift run -c release Benchmarks wire

        GROUPS:

        """
    for group in groups {
        text += "  " + group.name + String(repeating: " ", count: nameWidth - group.name.count) + "  "
        text += group.summary + "\n"
    }
    text += """

        OPTIONS:
          --min-time <seconds>  minimum duration of one timed run (default 0.5)
          --repeats <n>         timed runs per measurement; the median is reported (default 3)
          -h, --help            show this help

        """
    return text
}

func fail(_ message: String) -> Never {
    var standardError = StandardError()
    print("error: \(message)\n", to: &standardError)
    print(usage(), terminator: "", to: &standardError)
    exit(2)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { bytes in _ = Glibc.write(2, bytes.baseAddress, bytes.count) }
    }
}

var options = BenchmarkOptions()
var selected: [BenchmarkGroup] = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "-h", "--help", "help":
        print(usage(), terminator: "")
        exit(0)
    case "--min-time":
        guard let value = arguments.popFirst().flatMap(Double.init), value > 0 else {
            fail("--min-time needs a positive number of seconds")
        }
        options.minTime = .nanoseconds(Int64(value * 1e9))
    case AllocationCounter.probeFlag:
        options.allocationProbe = true
    case "--repeats":
        guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else {
            fail("--repeats needs a positive integer")
        }
        options.repeats = value
    default:
        guard let group = groups.first(where: { $0.name == argument }) else {
            fail("unknown group or option '\(argument)'")
        }
        if !selected.contains(where: { $0.name == group.name }) { selected.append(group) }
    }
}
if selected.isEmpty { selected = groups }

#if DEBUG
if !options.allocationProbe { print("warning: this is a debug build; numbers are meaningless. Use `swift run -c release Benchmarks`.\n") }
#endif

for group in selected {
    group.run(options)
}
if options.allocationProbe { exit(0) }
print("checksum: \(Sink.checksum)  (printed so the optimizer keeps the measured work)")
