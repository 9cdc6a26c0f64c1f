import Foundation

/// A fresh folder under the system's temporary directory, removed when the value is released.
public final class TemporaryFolder {
    public let path: String

    public init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("RemoteSupportTests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A path inside the folder.
    public func file(_ name: String) -> String { path + "/" + name }
}
