// swift-tools-version:6.0
// RemoteSupport: a Swift-native remote-support signalling stack.
// No outside packages: only the toolchain's libraries and Debian's C libraries.
import PackageDescription

let package = Package(
    name: "RemoteSupport",
    products: [
        .library(name: "SupportWire", targets: ["SupportWire"]),
        .library(name: "SupportTransport", targets: ["SupportTransport"]),
        .library(name: "SupportSession", targets: ["SupportSession"]),
        .library(name: "SupportRegistry", targets: ["SupportRegistry"]),
        .library(name: "SupporterNode", targets: ["SupporterNode"]),
        .library(name: "SupporterREST", targets: ["SupporterREST"]),
        .library(name: "DeviceNode", targets: ["DeviceNode"]),
    ],
    targets: [
        // The shared framing module: pure Swift, no I/O, no OpenSSL, no Foundation.
        .target(name: "SupportWire"),
        // The session state machines of both roles: pure values, events in, actions out (SPEC §8, §9).
        .target(name: "SupportSession", dependencies: ["SupportWire", "SupportUtilities"]),
        // The supporter node's registry of codes, connections and abuse state: a pure value (events in, decisions and
        // store intents out), like the session machines.
        .target(name: "SupportRegistry", dependencies: ["SupportSession", "SupportUtilities"]),
        // OpenSSL 3 from Debian (libssl-dev): its C shims, in one place.
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", providers: [.apt(["libssl-dev"])]),
        // The Linux-only system calls (epoll, eventfd, accept4, prctl), in one place: a port replaces this target.
        .systemLibrary(name: "CLinuxShims", path: "Sources/CLinuxShims"),
        // No I/O: Base64, hexadecimal, SHA-256 and the monotonic clock, for every layer.
        .target(name: "SupportUtilities", dependencies: ["COpenSSL"]),
        // The I/O runtime: the event loop behind a `Poller` (epoll here), non-blocking sockets, TLS on OpenSSL.
        .target(name: "SupportRuntime", dependencies: ["SupportUtilities", "COpenSSL", "CLinuxShims"]),
        // The link both nodes share: the pure link state machine, the framed link over a TLS stream, the dialer.
        .target(name: "SupportLink", dependencies: ["SupportWire", "SupportRuntime", "SupportUtilities"]),
        // The three transport layers under one import.
        .target(name: "SupportTransport", dependencies: ["SupportUtilities", "SupportRuntime", "SupportLink"]),
        // SQLite 3 from Debian (libsqlite3-dev): the supporter node's durable store.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        // The supporter node: registry of codes and tokens, device connections, supporter commands.
        .target(
            name: "SupporterNode",
            dependencies: ["SupportSession", "SupportRegistry", "SupportTransport", "CSQLite", "SupportPostgres"]),
        // The supporter node's REST API (protocol/openapi.yaml), served beside the node on its public API only.
        .target(name: "SupporterREST", dependencies: ["SupporterNode", "SupportHTTP", "SupportUtilities"], resources: [.copy("Console")]),
        // libpq (Debian libpq-dev) and the PostgreSQL client built on it, for the PostgreSQL store (issue 12).
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .target(name: "SupportPostgres", dependencies: ["CLibPQ"]),
        // The device SDK an app embeds.
        .target(name: "DeviceNode", dependencies: ["SupportSession", "SupportTransport"]),
        // A small, strict HTTP/1.1 server over TLSStream for the supporter node's REST API.
        .target(name: "SupportHTTP", dependencies: ["SupportTransport"]),
        // The runnable nodes: a small shared CLI helper and the two command-line programs.
        .target(name: "CLIKit", dependencies: ["SupportSession", "SupportTransport"], path: "examples/CLIKit"),
        .executableTarget(
            name: "rsup-supporter", dependencies: ["CLIKit", "SupporterNode", "SupporterREST"], path: "examples/SupporterCLI"),
        .executableTarget(name: "rsup-device", dependencies: ["CLIKit", "DeviceNode"], path: "examples/DeviceCLI"),
        // The sample app of the device SDK guide (docs/sdk.md): its app-wide model (a library, driven by NodeTests) and
        // a tiny terminal front end standing in for its views.
        .target(name: "SampleAppModel", dependencies: ["DeviceNode"], path: "examples/SampleApp/Model"),
        .executableTarget(name: "rsup-sample", dependencies: ["SampleAppModel"], path: "examples/SampleApp/CLI"),
        .executableTarget(
            name: "Benchmarks",
            dependencies: [
                "SupportWire", "SupportTransport", "CLinuxShims", "DeviceNode", "SupporterNode", "SupporterREST",
                "SupportPostgres",
            ],
            path: "Benchmarks"),
        .testTarget(name: "SupportWireTests", dependencies: ["SupportWire", "TestSupport"]),
        .testTarget(name: "SupportSessionTests", dependencies: ["SupportSession"]),
        .testTarget(name: "SupporterNodeTests", dependencies: ["SupporterNode", "TestSupport"]),
        .testTarget(name: "SupportRegistryTests", dependencies: ["SupportRegistry", "TestSupport"]),
        .testTarget(name: "SupporterRESTTests", dependencies: ["SupporterREST", "TestSupport"]),
        .testTarget(name: "SupportPostgresTests", dependencies: ["SupportPostgres", "TestSupport"]),
        // Certificates made at test time, shared by the test targets that speak TLS.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "SupportRuntimeTests", dependencies: ["SupportRuntime", "SupportUtilities", "TestSupport"]),
        .testTarget(
            name: "SupportLinkTests", dependencies: ["SupportLink", "SupportRuntime", "SupportUtilities", "SupportWire", "TestSupport"]),
        .testTarget(
            name: "NodeTests", dependencies: ["DeviceNode", "SampleAppModel", "SupporterNode", "SupportPostgres", "TestSupport"]),
        .testTarget(name: "DeviceNodeTests", dependencies: ["DeviceNode"]),
        .testTarget(name: "SupportHTTPTests", dependencies: ["SupportHTTP", "TestSupport"]),
        .testTarget(name: "SupportUtilitiesTests", dependencies: ["SupportUtilities"]),
        // Every Swift snippet of README.md and docs/*.md, type-checked against the built modules. Its dependencies are
        // the modules the snippets import, so that SwiftPM builds them before the test runs; the test itself takes
        // the module search path, not a list of modules.
        .testTarget(
            name: "DocumentationTests",
            dependencies: ["DeviceNode", "SupportSession", "SupportRuntime", "SupportWire", "SupporterNode", "SupporterREST"]),
        // The two CLIs run as real processes against real TLS on loopback (SwiftPM builds them for this target).
        .testTarget(
            name: "CLITests", dependencies: ["rsup-supporter", "rsup-device", "DeviceNode", "SupportTransport", "TestSupport"], path: "Tests/CLITests"),
    ],
    swiftLanguageModes: [.v6]
)
