import Foundation
import Glibc
import SupportUtilities

extension ParsedArguments {
    /// A secret given either on the command line (`--token TOKEN`) or in a file (`--token-file FILE`), or nil if
    /// neither option is there. Giving both is a usage error.
    ///
    /// The file form is the one to recommend: every user of the machine sees a command line in `ps`. See
    /// ``TokenFile/read(_:option:warn:)`` for how the file is read.
    public func secret(
        _ name: String, fileOption: String, warn: (String) -> Void = TokenFile.warnOnStandardError
    ) throws(CLIError) -> String? {
        let inline = options[name]
        let path = options[fileOption]
        switch (inline, path) {
        case (nil, nil):
            return nil
        case (.some, .some):
            throw .usage("give --\(name) or --\(fileOption), not both")
        case (.some(let value), nil):
            guard !value.isEmpty else { throw .usage("--\(name) is empty") }
            return value
        case (nil, .some(let path)):
            return try TokenFile.read(path, option: fileOption, warn: warn)
        }
    }
}

/// Reads a token from a file: its first line, with surrounding white space trimmed.
public enum TokenFile {
    /// The most a token file may hold; a token is a line, not a document.
    public static let maximumSize = 64 * 1024

    /// Writes `warning: …` on stderr.
    public static func warnOnStandardError(_ text: String) {
        StandardStreams.writeError("warning: \(text)\n")
    }

    /// The token on `path`'s first line.
    ///
    /// A file that the group or others may read is used, with a warning through `warn` that says how to make it
    /// private: refusing it would push people back to the command line, which every user sees.
    ///
    /// - Throws: `.failure` if the file cannot be read or its first line is empty.
    public static func read(_ path: String, option: String, warn: (String) -> Void) throws(CLIError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw .failure("cannot read the token file \(path) (--\(option)): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw .failure("the token file \(path) (--\(option)) is not a regular file")
        }
        if status.st_mode & 0o077 != 0 {
            let mode = String(status.st_mode & 0o777, radix: 8)
            warn(
                "the token file \(path) can be read by other users (mode \(mode)); "
                    + "make it private with 'chmod 600 \(path)'")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= maximumSize {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                throw .failure("cannot read the token file \(path) (--\(option)): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += buffer[0..<count]
            if bytes.contains(UInt8(ascii: "\n")) { break }
        }
        let firstLine = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false)
            .first ?? []
        guard firstLine.count <= maximumSize else {
            throw .failure("the token file \(path) (--\(option)) has no line break in its first \(maximumSize) bytes")
        }
        let token = String(decoding: firstLine, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else {
            throw .failure("the token file \(path) (--\(option)) holds no token on its first line")
        }
        return token
    }
}
