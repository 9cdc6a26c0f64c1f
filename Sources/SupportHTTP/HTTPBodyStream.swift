import Synchronization
import SupportUtilities

/// A response body written over time (Server-Sent Events): the handler returns a response carrying the stream and
/// keeps sending into it; the connection writes each piece as it comes and closes when the stream finishes.
///
/// Bounded: at most ``capacity`` bytes may wait between ``send(_:)`` and the socket. A client that reads too slowly
/// for that is dropped (the connection closes, ``send(_:)`` returns false), never buffered without end; the TLS
/// connection's own bound on unsent bytes applies beyond that.
public final class HTTPBodyStream: Sendable, Hashable {
    enum Piece: Sendable {
        case bytes([UInt8])
        /// Finished: close once what was sent is written.
        case end
        /// The client fell too far behind: close at once, dropping what waits.
        case drop
    }

    private struct State {
        var waiting: [Piece] = []
        var waitingBytes = 0
        var deliver: (@Sendable (Piece) -> Void)?
        var closed = false
        /// Closed because the client fell behind (before or after the connection attached).
        var dropped = false
    }

    /// Bytes that may wait for the socket.
    public let capacity: Int
    private let state = Mutex(State())

    public init(capacity: Int = 256 << 10) { self.capacity = capacity }

    /// Queues `bytes` for the client. False when the client is gone, the stream finished, or the client fell more than
    /// ``capacity`` bytes behind (the connection is then closed): stop sending.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        let (deliver, ok) = state.withLock { state -> ((@Sendable (Piece) -> Void)?, Bool) in
            guard !state.closed else { return (nil, false) }
            guard state.waitingBytes + bytes.count <= capacity else {
                state.closed = true
                state.dropped = true
                state.waiting = []
                return (state.deliver, false)
            }
            state.waitingBytes += bytes.count
            guard let deliver = state.deliver else {
                state.waiting.append(.bytes(bytes))
                return (nil, true)
            }
            return (deliver, true)
        }
        deliver?(ok ? .bytes(bytes) : .drop)
        return ok
    }

    /// Ends the body: the connection closes once what was sent is written.
    public func finish() {
        let deliver = state.withLock { state -> (@Sendable (Piece) -> Void)? in
            guard !state.closed else { return nil }
            state.closed = true
            guard let deliver = state.deliver else {
                state.waiting.append(.end)
                return nil
            }
            return deliver
        }
        deliver?(.end)
    }

    /// Whether nothing more can be sent (client gone, too slow, or finished).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Bytes sent but not yet written to the connection.
    public var waitingBytes: Int { state.withLock { $0.waitingBytes } }

    /// The connection is ready: `deliver` gets every piece, in order (the ones sent before at once).
    func attach(_ deliver: @escaping @Sendable (Piece) -> Void) {
        let waiting = state.withLock { state -> [Piece] in
            state.deliver = deliver
            defer { state.waiting = [] }
            // Dropped before the connection was ready: it closes at once.
            return state.dropped ? [.drop] : state.waiting
        }
        for piece in waiting { deliver(piece) }
    }

    /// The connection wrote `count` bytes of what was sent.
    func written(_ count: Int) { state.withLock { $0.waitingBytes -= count } }

    /// The connection closed: nothing more will be written.
    func connectionClosed() {
        state.withLock { state in
            state.closed = true
            state.waiting = []
            state.deliver = nil
        }
    }

    public static func == (lhs: HTTPBodyStream, rhs: HTTPBodyStream) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
