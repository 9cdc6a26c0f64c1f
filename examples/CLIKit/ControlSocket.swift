import Foundation
import Glibc

/// A local control channel: JSON requests and replies, one line each, over a Unix socket in the node's data folder.
/// Only the folder's owner can reach it (the folder is made 0700).
public enum ControlSocket {
    /// Sends one request and returns the reply.
    public static func request(path: String, _ request: [String: Any]) throws(CLIError) -> [String: Any] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .failure("cannot create a socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = try unixAddress(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            throw .failure(
                "no supporter node is serving with this data folder (\(path): \(String(cString: strerror(errno)))) — start it with 'rsup-supporter serve'")
        }
        try writeLine(fd, Console.encode(request))
        guard let line = readLine(fd),
            let reply = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { throw .failure("the supporter node gave no answer on \(path)") }
        return reply
    }

    static func unixAddress(_ path: String) throws(CLIError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw .usage("the control socket path \(path) is too long; use a shorter --data folder")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        return address
    }

    static func writeLine(_ fd: Int32, _ text: String) throws(CLIError) {
        let bytes = Array((text + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + sent, bytes.count - sent) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw .failure("the control socket closed") }
            sent += count
        }
    }

    /// Reads up to a newline (at most 1 MiB).
    static func readLine(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < 1 << 20 {
            let count = read(fd, &byte, 1)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return nil
    }

    /// Serves requests on `path` until the process ends; `handle` answers each on a thread of its own.
    public static func serve(
        path: String, handle: @escaping @Sendable ([String: Any]) -> [String: Any]
    ) throws(CLIError) {
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .failure("cannot create the control socket: \(String(cString: strerror(errno)))") }
        var address = try unixAddress(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw .failure("cannot listen on \(path): \(String(cString: strerror(errno)))")
        }
        chmod(path, 0o600)
        Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return
                }
                Thread {
                    defer { close(client) }
                    guard let line = readLine(client) else { return }
                    let reply: [String: Any]
                    if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] {
                        reply = handle(object)
                    } else {
                        reply = ["ok": false, "error": "the request is not a JSON object"]
                    }
                    try? writeLine(client, Console.encode(reply))
                }.start()
            }
        }.start()
    }
}
