// swift-tools-version:6.0
// RemoteSupport: a Swift-native remote-support signalling stack.
// No outside packages: only the toolchain's libraries and Debian's C libraries.
import PackageDescription

let package = Package(
    name: "RemoteSupport",
    products: [
        .library(name: "SupportWire", targets: ["SupportWire"]),
    ],
    targets: [
        // The shared framing module: pure Swift, no I/O, no OpenSSL, no Foundation.
        .target(name: "SupportWire"),
        .executableTarget(name: "Benchmarks", dependencies: ["SupportWire"], path: "Benchmarks"),
        .testTarget(name: "SupportWireTests", dependencies: ["SupportWire"]),
    ],
    swiftLanguageModes: [.v6]
)
