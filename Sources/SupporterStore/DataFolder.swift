import SupporterCore
import Foundation
import Synchronization
import Glibc
import SupportWire
import SupportUtilities

/// The node's data folder (the store, the control socket): it holds customer names, the audit trail and API token
/// digests, so it is for the user who runs the node only (`0700`).
public enum DataFolder {
    /// What ``prepare(path:)`` did.
    public struct Preparation: Sendable, Hashable {
        /// The folder.
        public var path: String
        /// True when the folder did not exist and was created.
        public var created: Bool
        /// The permission bits the folder had before they were tightened to `0700`; nil when they were left alone.
        public var tightenedFrom: UInt16?

        public init(path: String, created: Bool, tightenedFrom: UInt16?) {
            self.path = path
            self.created = created
            self.tightenedFrom = tightenedFrom
        }

        /// One sentence for the operator when the permissions were tightened; nil otherwise.
        public var note: String? {
            guard let tightenedFrom else { return nil }
            return "tightened the permissions of the data folder \(path) from \(DataFolder.octal(tightenedFrom)) to "
                + "0700: it holds the audit trail and API token digests, for this user only"
        }
    }

    /// Makes `path` a folder only its owner can use: creates it (and missing parent folders) with mode `0700` when it
    /// does not exist; when it exists with permissions for the group or others, tightens them to `0700` and says so
    /// in the result's ``Preparation/note``.
    ///
    /// Refuses (kind ``StoreError/Kind/integrity``) a folder open to others that belongs to another user — even
    /// root does not silently change someone else's folder — and throws kind ``StoreError/Kind/io`` when `path` is
    /// not a folder or cannot be created or changed. The errors say what to do.
    @discardableResult
    public static func prepare(path: String) throws(StoreError) -> Preparation {
        var created = false
        var status = stat()
        if stat(path, &status) != 0 {
            guard errno == ENOENT else { throw failure("cannot inspect it", path: path) }
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty {
                do {
                    try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
                } catch {
                    throw StoreError(
                        kind: .io, operation: "create data folder",
                        message: "cannot create its parent folder: \(error.localizedDescription)", path: path)
                }
            }
            if mkdir(path, 0o700) == 0 {
                created = true
                guard chmod(path, 0o700) == 0 else { throw failure("cannot set its permissions to 0700", path: path) }
            } else if errno != EEXIST {
                throw failure("cannot create it", path: path)
            }
            guard stat(path, &status) == 0 else { throw failure("cannot inspect it", path: path) }
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw StoreError(
                kind: .io, operation: "prepare data folder",
                message: "it exists but is not a folder: give a folder with --data", path: path)
        }
        let mode = UInt16(status.st_mode & 0o7777)
        guard access(path, W_OK | X_OK) == 0 else {
            throw StoreError(
                kind: .io, operation: "prepare data folder",
                message:
                    "this user cannot write in it (mode \(octal(mode)), owner \(status.st_uid)): as its owner run "
                    + "'chmod 700 \(path)', or give a folder of your own with --data",
                path: path)
        }
        guard mode & 0o077 != 0 else { return Preparation(path: path, created: created, tightenedFrom: nil) }
        guard status.st_uid == geteuid() else {
            throw StoreError(
                kind: .integrity, operation: "prepare data folder",
                message:
                    "other users may use it (mode \(octal(mode))) and it belongs to user \(status.st_uid), not to this "
                    + "user (\(geteuid())): as its owner run 'chmod 700 \(path)', or give a folder of your own with "
                    + "--data",
                path: path)
        }
        guard chmod(path, 0o700) == 0 else {
            throw failure(
                "other users may use it (mode \(octal(mode))) and its permissions cannot be set to 0700", path: path)
        }
        return Preparation(path: path, created: created, tightenedFrom: mode)
    }

    package static func octal(_ mode: UInt16) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private static func failure(_ what: String, path: String) -> StoreError {
        StoreError(
            kind: .io, operation: "prepare data folder",
            message: "\(what): \(String(cString: strerror(errno)))", path: path)
    }
}

/// A data folder held by the one supporter node serving from it: an exclusive `flock` on `serve.lock` inside the
/// folder, held until the process ends (or ``release()``). A second node on the same folder would share its store
/// with another registry and take over its control socket, so it is refused instead.
public final class DataFolderLock: Sendable {
    private let descriptor: Int32
    private let released = Atomic<Bool>(false)
    public let path: String

    /// Takes the lock of the data folder `folder` (which ``DataFolder/prepare(path:)`` made), or throws kind
    /// ``StoreError/Kind/busy`` naming the process that holds it.
    public init(folder: String) throws(StoreError) {
        path = folder + "/serve.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StoreError(
                kind: .io, operation: "lock data folder", message: String(cString: strerror(errno)), path: path)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = read(fd, &buffer, buffer.count)
            close(fd)
            let holder = count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines) : ""
            guard code == EWOULDBLOCK else {
                throw StoreError(
                    kind: .io, operation: "lock data folder", message: String(cString: strerror(code)), path: path)
            }
            throw StoreError(
                kind: .busy, operation: "lock data folder",
                message:
                    "another supporter node is serving with this data folder"
                    + (Int32(holder).map { " (process \($0))" } ?? "")
                    + ": stop it first, or give another --data",
                path: folder)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        descriptor = fd
    }

    /// Lets the folder go (also done when the process ends). Unlocks before closing: a child process started at that
    /// moment elsewhere in this process holds a copy of the descriptor until it runs its program, and the lock
    /// belongs to the open file, not to this descriptor. A second call does nothing.
    public func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
