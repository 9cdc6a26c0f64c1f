// swift-tools-version:6.0
// RemoteSupport: a Swift-native remote-support signalling stack.
// No outside packages: only the toolchain's libraries and Debian's C libraries.
import PackageDescription

let package = Package(
    name: "RemoteSupport",
    products: [
        .library(name: "SupportWire", targets: ["SupportWire"]),
        .library(name: "SupportTransport", targets: ["SupportTransport"]),
    ],
    targets: [
        // The shared framing module: pure Swift, no I/O, no OpenSSL, no Foundation.
        .target(name: "SupportWire"),
        // OpenSSL 3 from Debian (libssl-dev) and every C shim of the project, in one place.
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", providers: [.apt(["libssl-dev"])]),
        // TLS on OpenSSL, non-blocking sockets, an epoll loop, and the framed link both nodes share.
        .target(name: "SupportTransport", dependencies: ["SupportWire", "COpenSSL"]),
        .executableTarget(name: "Benchmarks", dependencies: ["SupportWire"], path: "Benchmarks"),
        .testTarget(name: "SupportWireTests", dependencies: ["SupportWire"]),
        .testTarget(name: "SupportTransportTests", dependencies: ["SupportTransport", "SupportWire"]),
    ],
    swiftLanguageModes: [.v6]
)
