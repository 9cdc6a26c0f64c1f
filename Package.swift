// swift-tools-version:6.0
// RemoteSupport: a Swift-native remote-support signalling stack.
// No outside packages: only the toolchain's libraries and Debian's C libraries.
import PackageDescription

// Every Swift target: a plain `import` is internal (`public import` only where a module's public API shows the
// imported module's types), so what a module shows is what it declares.
let settings: [SwiftSetting] = [.enableUpcomingFeature("InternalImportsByDefault")]

let package = Package(
    name: "RemoteSupport",
    products: [
        .library(name: "SupportVocabulary", targets: ["SupportVocabulary"]),
        .library(name: "SupportWire", targets: ["SupportWire"]),
        .library(name: "SupportUtilities", targets: ["SupportUtilities"]),
        .library(name: "SupportMetrics", targets: ["SupportMetrics"]),
        .library(name: "SupportRuntime", targets: ["SupportRuntime"]),
        .library(name: "SupportLink", targets: ["SupportLink"]),
        .library(name: "SupportSession", targets: ["SupportSession"]),
        .library(name: "SupporterModel", targets: ["SupporterModel"]),
        .library(name: "SupporterCore", targets: ["SupporterCore"]),
        .library(name: "SupporterStore", targets: ["SupporterStore"]),
        .library(name: "SupporterStoreSQLite", targets: ["SupporterStoreSQLite"]),
        .library(name: "SupporterStorePostgres", targets: ["SupporterStorePostgres"]),
        .library(name: "SupporterStores", targets: ["SupporterStores"]),
        .library(name: "SupporterNode", targets: ["SupporterNode"]),
        .library(name: "SupporterREST", targets: ["SupporterREST"]),
        .library(name: "DeviceNode", targets: ["DeviceNode"]),
    ],
    targets: [
        // The protocol's words, shared by every layer and by front ends that never see a frame: features and feature
        // sets, feature rules, connection and code types. Pure Swift, no dependencies.
        .target(name: "SupportVocabulary", swiftSettings: settings),
        // The shared framing module: frames, messages and their codec. Pure Swift, no I/O, no OpenSSL, no Foundation.
        .target(name: "SupportWire", dependencies: ["SupportVocabulary"], swiftSettings: settings),
        // No I/O: Base64, hexadecimal, SHA-256/HMAC, constant-time comparison, the token bucket, the monotonic clock,
        // the log sink (NodeLogger, Redact), the terminal escaping rule (TerminalText) and scrypt password hashing
        // (PasswordHash), for every layer.
        .target(name: "SupportUtilities", dependencies: ["COpenSSL"], swiftSettings: settings),
        // Prometheus metrics: counters, histograms, read-when-scraped gauges and the text exposition format. No I/O,
        // no dependencies.
        .target(name: "SupportMetrics", swiftSettings: settings),
        // The session state machines of both roles: pure values, events in, actions out (SPEC §8, §9).
        .target(
            name: "SupportSession", dependencies: ["SupportVocabulary", "SupportWire", "SupportUtilities"],
            swiftSettings: settings),
        // What a supporter node shows and takes at its front ends: code, account, token, login-session and audit
        // values, the node's error, the back-off and audit-throttle rules, and the `SupporterService` protocol the
        // REST API is built on. No registry, store or wire message is reachable from here.
        .target(
            name: "SupporterModel", dependencies: ["SupportVocabulary", "SupportUtilities", "SupportMetrics"],
            swiftSettings: settings),
        // The supporter node's pure core: the registry of codes, connections and abuse state (events in, decisions
        // and store intents out), the audit chain, token and login-session tables, login guards. No I/O.
        .target(
            name: "SupporterCore",
            dependencies: ["SupporterModel", "SupportVocabulary", "SupportSession", "SupportWire", "SupportUtilities"],
            swiftSettings: settings),
        // OpenSSL 3 from Debian (libssl-dev): its C shims, in one place.
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", providers: [.apt(["libssl-dev"])]),
        // The Linux-only system calls (epoll, eventfd, accept4, prctl), in one place: a port replaces this target.
        .systemLibrary(name: "CLinuxShims", path: "Sources/CLinuxShims"),
        // The I/O runtime: the event loop behind a `Poller` (epoll here), non-blocking sockets, TLS on OpenSSL.
        .target(
            name: "SupportRuntime", dependencies: ["SupportUtilities", "SupportMetrics", "COpenSSL", "CLinuxShims"],
            swiftSettings: settings),
        // The link both nodes share: the pure link state machine, the framed link over a TLS stream, the dialer.
        .target(
            name: "SupportLink", dependencies: ["SupportWire", "SupportRuntime", "SupportUtilities", "COpenSSL"],
            swiftSettings: settings),
        // SQLite 3 from Debian (libsqlite3-dev): the supporter node's durable store.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        // The supporter node: registry of codes and tokens, device connections, supporter commands.
        .target(
            name: "SupporterNode",
            dependencies: [
                "SupporterModel", "SupporterCore", "SupporterStore", "SupportVocabulary", "SupportSession", "SupportWire",
                "SupportUtilities", "SupportRuntime", "SupportLink", "SupportMetrics",
            ],
            swiftSettings: settings),
        // What a supporter node needs from its durable store, whatever the engine: the engine, audit-trail and
        // cluster-bus protocols, StoreError, the audit archive format and the data folder. No engine here.
        .target(
            name: "SupporterStore",
            dependencies: ["SupporterCore", "SupportSession", "SupportWire", "SupportUtilities", "SupportMetrics"],
            swiftSettings: settings),
        // The embedded default engine: one SQLite file (Debian libsqlite3-dev), its writer thread and checkpoints.
        .target(
            name: "SupporterStoreSQLite",
            dependencies: [
                "SupporterStore", "SupporterCore", "SupportSession", "SupportWire", "SupportUtilities", "SupportRuntime",
                "SupportMetrics",
                "CSQLite",
            ],
            swiftSettings: settings),
        // The PostgreSQL engine (libpq through SupportPostgres), with the cluster listener and peers as its cluster bus.
        .target(
            name: "SupporterStorePostgres",
            dependencies: [
                "SupporterStore", "SupporterCore", "SupportSession", "SupportWire", "SupportUtilities", "SupportPostgres",
                "SupportMetrics",
            ],
            swiftSettings: settings),
        // The engines a node can be built with, chosen by name (`StoreBackend`), and the audit trail opened by a tool
        // in either: the one place that knows every engine. A new engine is a new target and a case here.
        .target(
            name: "SupporterStores",
            dependencies: [
                "SupporterStore", "SupporterStoreSQLite", "SupporterStorePostgres", "SupporterCore", "SupportWire",
                "SupportUtilities", "SupportPostgres",
            ],
            swiftSettings: settings),
        // The supporter node's REST API (protocol/openapi.yaml) and web console, over any `SupporterService`. Neither
        // the node, its registry, its stores nor a wire message is in its dependency closure.
        .target(
            name: "SupporterREST",
            dependencies: [
                "SupporterModel", "SupportVocabulary", "SupportHTTP", "SupportUtilities", "SupportRuntime", "SupportMetrics",
            ],
            resources: [.copy("Console")], swiftSettings: settings),
        // Webhook deliveries: the URL and address rules, signatures, the retry schedule (pure), and the dispatcher that
        // POSTs a node's share of the store's outbox from threads of its own.
        .target(
            name: "SupporterWebhooks",
            dependencies: ["SupporterModel", "SupportHTTP", "SupportRuntime", "SupportUtilities", "SupportMetrics"],
            swiftSettings: settings),
        // libpq (Debian libpq-dev) and the PostgreSQL client built on it, for the PostgreSQL store (issue 12).
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .target(name: "SupportPostgres", dependencies: ["CLibPQ"], swiftSettings: settings),
        // The device SDK an app embeds.
        .target(
            name: "DeviceNode",
            dependencies: ["SupportSession", "SupportWire", "SupportUtilities", "SupportRuntime", "SupportLink"],
            swiftSettings: settings),
        // A small, strict HTTP/1.1 server over TLSStream for the supporter node's REST API.
        .target(
            name: "SupportHTTP", dependencies: ["SupportRuntime", "SupportUtilities"],
            swiftSettings: settings),
        // The runnable nodes: a small shared CLI helper and the two command-line programs.
        .target(
            name: "CLIKit", dependencies: ["SupportSession", "SupportRuntime", "SupportUtilities", "SupportVocabulary"],
            path: "examples/CLIKit",
            swiftSettings: settings),
        .executableTarget(
            name: "rsup-supporter",
            dependencies: ["SupporterStore", "SupporterStores", "SupporterWebhooks",
                "CLIKit", "SupporterNode", "SupporterREST", "SupporterCore", "SupportSession", "SupportWire",
                "SupportRuntime", "SupportUtilities",
            ],
            path: "examples/SupporterCLI", swiftSettings: settings),
        .executableTarget(
            name: "rsup-device",
            dependencies: ["CLIKit", "DeviceNode", "SupportSession", "SupportWire", "SupportRuntime", "SupportUtilities"],
            path: "examples/DeviceCLI", swiftSettings: settings),
        // The sample app of the device SDK guide (docs/sdk.md): its app-wide model (a library, driven by NodeTests) and
        // a tiny terminal front end standing in for its views.
        .target(
            name: "SampleAppModel", dependencies: ["DeviceNode"], path: "examples/SampleApp/Model",
            swiftSettings: settings),
        .executableTarget(
            name: "rsup-sample", dependencies: ["SampleAppModel", "DeviceNode", "SupportWire"],
            path: "examples/SampleApp/CLI", swiftSettings: settings),
        .executableTarget(
            name: "Benchmarks",
            dependencies: ["SupporterStore", "SupporterStores", "SupporterStoreSQLite",
                "SupportWire", "SupportUtilities", "SupportRuntime", "SupportLink", "SupportSession", "SupporterCore",
                "CLinuxShims", "COpenSSL", "DeviceNode", "SupporterNode", "SupporterREST", "SupportPostgres", "CLIKit",
            ],
            path: "Benchmarks", swiftSettings: settings),
        .testTarget(
            name: "SupporterWebhooksTests", dependencies: ["SupporterWebhooks", "SupporterModel", "SupportUtilities"],
            swiftSettings: settings),
        .testTarget(name: "SupportWireTests", dependencies: ["SupportWire", "TestSupport"], swiftSettings: settings),
        .testTarget(
            name: "SupportSessionTests", dependencies: ["SupportSession", "SupportWire", "SupportUtilities"],
            swiftSettings: settings),
        .testTarget(
            name: "SupporterNodeTests",
            dependencies: ["StoreTestSupport", "SupporterStore", "SupporterStoreSQLite", "SupporterStorePostgres", "SupporterStores",
                "SupporterNode", "SupporterCore", "SupportSession", "SupportWire", "SupportUtilities", "TestSupport",
            ],
            swiftSettings: settings),
        .testTarget(
            name: "SupporterCoreTests", dependencies: ["SupporterCore", "SupportSession", "SupportWire", "TestSupport"],
            swiftSettings: settings),
        // The store modules' own tests, each in the target named after the module of the type it tests.
        .testTarget(name: "SupporterStoreTests", dependencies: ["SupporterStore", "TestSupport"], swiftSettings: settings),
        .testTarget(
            name: "SupporterStoreSQLiteTests",
            dependencies: [
                "SupporterStoreSQLite", "SupporterStore", "SupporterCore", "SupportSession", "SupportWire", "TestSupport",
                "StoreTestSupport",
            ],
            swiftSettings: settings),
        // Each test starts a throwaway PostgreSQL cluster (TestSupport's ThrowawayPostgres).
        .testTarget(
            name: "SupporterStorePostgresTests",
            dependencies: [
                "SupporterStorePostgres", "SupporterStore", "SupporterCore", "SupportSession", "SupportPostgres",
                "TestSupport", "StoreTestSupport",
            ],
            swiftSettings: settings),
        .testTarget(
            name: "SupporterRESTTests",
            dependencies: ["StoreTestSupport", "SupporterStore", "SupporterStores",
                "SupporterREST", "SupporterNode", "SupporterCore", "SupportSession", "SupportWire", "SupportHTTP",
                "SupportRuntime", "TestSupport",
            ],
            swiftSettings: settings),
        .testTarget(
            name: "SupportPostgresTests", dependencies: ["SupportPostgres", "TestSupport"], swiftSettings: settings),
        // A store engine and a cluster bus that fail on command (the audit rule's proof), for the node's test targets.
        .target(
            name: "StoreTestSupport", dependencies: ["SupporterStore", "SupporterCore", "SupportUtilities", "SupportMetrics"],
            path: "Tests/StoreTestSupport", swiftSettings: settings),
        // Certificates made at test time, shared by the test targets that speak TLS.
        .target(name: "TestSupport", path: "Tests/TestSupport", swiftSettings: settings),
        .testTarget(
            name: "SupportRuntimeTests", dependencies: ["SupportRuntime", "SupportUtilities", "SupportWire", "TestSupport"],
            swiftSettings: settings),
        .testTarget(
            name: "SupportLinkTests",
            dependencies: ["SupportLink", "SupportRuntime", "SupportUtilities", "SupportWire", "COpenSSL", "TestSupport"],
            swiftSettings: settings),
        .testTarget(
            name: "NodeTests",
            dependencies: ["StoreTestSupport", "SupporterStore", "SupporterStoreSQLite", "SupporterStorePostgres", "SupporterStores",
                "DeviceNode", "SampleAppModel", "SupporterNode", "SupporterCore", "SupportSession", "SupportWire",
                "SupportUtilities", "SupportRuntime", "SupportPostgres", "COpenSSL", "TestSupport", "SupporterREST",
            ],
            swiftSettings: settings),
        .testTarget(
            name: "DeviceNodeTests", dependencies: ["DeviceNode", "SupportSession", "SupportWire"],
            swiftSettings: settings),
        .testTarget(
            name: "SupportHTTPTests", dependencies: ["SupportHTTP", "SupportRuntime", "TestSupport"],
            swiftSettings: settings),
        .testTarget(name: "SupportUtilitiesTests", dependencies: ["SupportUtilities"], swiftSettings: settings),
        .testTarget(name: "SupportMetricsTests", dependencies: ["SupportMetrics"], swiftSettings: settings),
        .testTarget(name: "SupporterModelTests", dependencies: ["SupporterModel"], swiftSettings: settings),
        // Every Swift snippet of README.md and docs/*.md, type-checked against the built modules. Its dependencies are
        // the modules the snippets import, so that SwiftPM builds them before the test runs; the test itself takes
        // the module search path, not a list of modules.
        .testTarget(
            name: "DocumentationTests",
            dependencies: [
                "DeviceNode", "SupportSession", "SupportRuntime", "SupportVocabulary", "SupportWire", "SupporterNode",
                "SupporterREST", "SupporterStores",
            ],
            swiftSettings: settings),
        // The two CLIs run as real processes against real TLS on loopback (SwiftPM builds them for this target).
        .testTarget(
            name: "CLITests",
            dependencies: [
                "rsup-supporter", "rsup-device", "DeviceNode", "SupportWire", "SupporterWebhooks", "TestSupport",
            ],
            path: "Tests/CLITests", swiftSettings: settings),
    ],
    swiftLanguageModes: [.v6]
)
