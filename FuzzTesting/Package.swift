// swift-tools-version:6.0
// Fuzz targets for SupportWire (the RemoteSupport wire codec) and SupportSession (the session state machines). A sibling package so that the sanitizer build never
// touches the main package's build: build and run it with ./run.sh, from this folder.
//
// One executable per target; each `main.swift` holds only `LLVMFuzzerTestOneInput` and is linked by
// `swift build --sanitize=fuzzer --sanitize=address`. The checks themselves live in FuzzCommon so that the targets
// stay small and agree on what "same result" means.
import PackageDescription

// The main package, normally the parent folder. FUZZ_MAIN_PACKAGE may point elsewhere (e.g. a checkout of another
// revision, or a stand-in while the parent's manifest is being edited); it must be a package named RemoteSupport
// with SupportVocabulary, SupportWire, SupportUtilities, SupportSession, SupporterModel and SupporterCore products.
let mainPackagePath = Context.environment["FUZZ_MAIN_PACKAGE"] ?? ".."

let package = Package(
    name: "FuzzTesting",
    dependencies: [
        .package(name: "RemoteSupport", path: mainPackagePath)
    ],
    targets: [
        .target(
            name: "FuzzCommon",
            dependencies: [.product(name: "SupportWire", package: "RemoteSupport")]),
        .executableTarget(
            name: "FuzzWireDecode",
            dependencies: ["FuzzCommon", .product(name: "SupportWire", package: "RemoteSupport")]),
        .executableTarget(
            name: "FuzzWireRoundTrip",
            dependencies: ["FuzzCommon", .product(name: "SupportWire", package: "RemoteSupport")]),
        // The session machines (SPEC §8, §9) driven by event sequences read from the input; checks in SessionFuzzing.
        .target(
            name: "SessionFuzzing",
            dependencies: [
                "FuzzCommon", .product(name: "SupportSession", package: "RemoteSupport"),
                .product(name: "SupportVocabulary", package: "RemoteSupport"),
                .product(name: "SupportWire", package: "RemoteSupport"),
                .product(name: "SupportUtilities", package: "RemoteSupport"),
            ]),
        .executableTarget(
            name: "FuzzSessionMachines",
            dependencies: ["SessionFuzzing"]),
        // The supporter node's code registry (SPEC §13) driven by event sequences read from the input.
        .executableTarget(
            name: "FuzzCodeRegistry",
            dependencies: [
                .product(name: "SupporterCore", package: "RemoteSupport"),
                .product(name: "SupporterModel", package: "RemoteSupport"),
                .product(name: "SupportVocabulary", package: "RemoteSupport"),
                .product(name: "SupportSession", package: "RemoteSupport"),
                .product(name: "SupportWire", package: "RemoteSupport"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
