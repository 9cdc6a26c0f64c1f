import SupportUtilities
import Synchronization

/// What a ``TLSStream`` tells its owner, on the stream's loop, in order.
public protocol TLSStreamDelegate: AnyObject, Sendable {
    /// The TLS handshake completed.
    func streamDidBecomeActive(_ stream: TLSStream)
    /// Decrypted bytes arrived; the buffer is valid only during the call.
    func stream(_ stream: TLSStream, didRead bytes: UnsafeRawBufferPointer)
    /// The stream closed: nil after a clean close_notify exchange, else why. No call follows. Called exactly once for
    /// every stream a ``TLSListener`` accepted and whose `onStream` returned true, also when the TLS handshake fails or
    /// times out, and when the loop shuts down (kind `event_loop_shut_down`).
    func streamDidClose(_ stream: TLSStream, error: TransportError?)
}

/// A raw byte stream over one TLS connection, for protocols other than ours (the REST API's HTTP/1.1).
///
/// Same transport as ``FramedLink``: non-blocking, on an event loop, with back-pressure (a peer that reads too slowly
/// is disconnected once more than the listener's `maxBufferedBytes` wait) and clean close.
public final class TLSStream: TLSConnectionHandler, @unchecked Sendable {
    // @unchecked: `connection` is used only on `loop` (public entry points hop there); the delegate sits in a Mutex.
    public let loop: EventLoop
    package let connection: TLSConnection
    private let delegateBox = Mutex<WeakDelegate>(WeakDelegate())
    private let closedFlag = Atomic<Bool>(false)
    /// The peer's address.
    public let peerAddress: SocketAddress?

    private struct WeakDelegate { weak var value: TLSStreamDelegate? }

    package init(connection: TLSConnection) {
        self.loop = connection.loop
        self.connection = connection
        self.peerAddress = connection.peerAddress
        connection.handler = self
    }

    /// The owner; weak. The open connection keeps the stream alive.
    public var delegate: TLSStreamDelegate? {
        get { delegateBox.withLock { $0.value } }
        set { delegateBox.withLock { $0.value = newValue } }
    }

    public var isClosed: Bool { closedFlag.load(ordering: .acquiring) }

    /// Bytes queued and not yet sent. Loop thread only.
    public var bufferedByteCount: Int { connection.bufferedByteCount }

    /// Sends `bytes`. On the loop: at once (throws `closed` or `write_buffer_full`); elsewhere: queued in order.
    public func write(_ bytes: [UInt8]) throws(TransportError) {
        guard !isClosed else { throw TransportError(.closed, "the stream is closed; nothing more can be sent") }
        if loop.inLoop {
            try connection.write(bytes)
        } else {
            let accepted = loop.execute { [self] in try? self.connection.write(bytes) }
            guard accepted else {
                throw TransportError(.eventLoopShutDown, "the stream's event loop is shut down; nothing can be sent")
            }
        }
    }

    /// Closes cleanly after what was written is sent. From any thread.
    public func close() {
        closedFlag.store(true, ordering: .releasing)
        if loop.inLoop {
            connection.close()
        } else {
            loop.execute { [self] in self.connection.close() }
        }
    }

    /// Closes at once, dropping whatever is queued and unsent (a peer that fell too far behind). From any thread.
    public func abort() {
        closedFlag.store(true, ordering: .releasing)
        let error = TransportError(.writeBufferFull, "dropped: the peer does not read fast enough")
        if loop.inLoop {
            connection.abort(error)
        } else {
            loop.execute { [self] in self.connection.abort(error) }
        }
    }

    package func connectionDidBecomeActive(_ connection: TLSConnection) { delegate?.streamDidBecomeActive(self) }

    package func connection(_ connection: TLSConnection, didRead bytes: UnsafeRawBufferPointer) {
        delegate?.stream(self, didRead: bytes)
    }

    package func connectionDidClose(_ connection: TLSConnection, error: TransportError?) {
        closedFlag.store(true, ordering: .releasing)
        delegate?.streamDidClose(self, error: error)
    }
}
