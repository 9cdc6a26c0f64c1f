import SupportUtilities
import Glibc

/// Reads a whole (small) file, with an error that names the file and says why.
package enum FileBytes {
    package static let limit = 4 << 20

    package static func read(_ path: String) throws(TransportError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TransportError(.fileUnreadable, "\(path): \(SystemError.describe(errno))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw TransportError(.fileUnreadable, "\(path): \(SystemError.describe(errno))")
            }
            bytes.append(contentsOf: chunk[0..<count])
            guard bytes.count <= limit else {
                throw TransportError(.fileUnreadable, "\(path): larger than \(limit) bytes; not a PEM file")
            }
        }
        return bytes
    }
}

/// errno in words.
package enum SystemError {
    package static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}
