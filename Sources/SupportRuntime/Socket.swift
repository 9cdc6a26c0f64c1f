internal import CLinuxShims
import SupportUtilities
internal import COpenSSL
import Glibc

/// Thin wrappers over the socket calls: EINTR retried, EAGAIN as "would block", errno turned into a typed error.
package enum Socket {
    package static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A non-blocking listening socket bound to `address`.
    package static func listen(on address: SocketAddress, backlog: Int32) throws(TransportError) -> Int32 {
        let fd = socket(address.family, rs_SOCK_STREAM_NONBLOCK_CLOEXEC(), 0)
        guard fd >= 0 else { throw TransportError(.socket, "socket: \(SystemError.describe(errno))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockaddr { bind(fd, $0, $1) }
        if bound != 0 {
            let code = errno
            close(fd)
            if code == EADDRINUSE {
                throw TransportError(
                    .addressInUse, "\(address) is already in use: another process listens there; stop it or choose another port")
            }
            throw TransportError(.socket, "cannot bind \(address): \(SystemError.describe(code))")
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw TransportError(.socket, "cannot listen on \(address): \(SystemError.describe(code))")
        }
        return fd
    }

    package enum AcceptResult {
        case accepted(Int32)
        case wouldBlock
        /// Out of file descriptors or memory: stop accepting for a moment.
        case exhausted(Int32)
        case failed(Int32)
    }

    package static func accept(_ listener: Int32) -> AcceptResult {
        while true {
            let fd = rs_accept_nonblocking(listener)
            if fd >= 0 { return .accepted(fd) }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .exhausted(errno)
            default: return .failed(errno)
            }
        }
    }

    /// Starts a non-blocking connect; returns the fd and whether it already completed.
    package static func startConnect(to address: SocketAddress) throws(TransportError) -> (fd: Int32, connected: Bool) {
        let fd = socket(address.family, rs_SOCK_STREAM_NONBLOCK_CLOEXEC(), 0)
        guard fd >= 0 else { throw TransportError(.socket, "socket: \(SystemError.describe(errno))") }
        while true {
            if address.withSockaddr({ connect(fd, $0, $1) }) == 0 { return (fd, true) }
            let code = errno
            if code == EINTR { continue }
            if code == EINPROGRESS { return (fd, false) }
            close(fd)
            throw connectError(code, address)
        }
    }

    /// The outcome of a non-blocking connect once the socket is writable.
    package static func connectResult(_ fd: Int32) -> Int32 {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
        return code
    }

    package static func connectError(_ code: Int32, _ address: SocketAddress) -> TransportError {
        switch code {
        case ECONNREFUSED:
            TransportError(.connectionRefused, "nothing listens at \(address): is the supporter node running?")
        case EHOSTUNREACH, ENETUNREACH:
            TransportError(.hostUnreachable, "\(address) is unreachable: check the address and the network")
        case ETIMEDOUT:
            TransportError(.connectTimeout, "connecting to \(address) timed out")
        default:
            TransportError(.socket, "cannot connect to \(address): \(SystemError.describe(code))")
        }
    }
}
