import Synchronization
import SupportSession
import SupportTransport

/// The device SDK's entry point: joins session codes on a supporter node, one at a time.
///
/// Hold the ``DeviceSession`` that ``connect(toSessionCode:delegate:)`` returns: dropping the last reference to it
/// leaves the code and closes its connection. The node itself keeps only a weak reference.
public final class DeviceNode: Sendable {
    public let configuration: DeviceConfiguration
    let context: TLSContext
    let loop: EventLoop
    private let ownsLoop: Bool
    private let current = Mutex<WeakSession>(WeakSession())
    private let handedOverCall = Mutex<String?>(nil)

    private struct WeakSession { weak var session: DeviceSession? }

    /// Checks the configuration (TLS files, pins, names) and starts the node's event loop.
    ///
    /// - Parameter tlsContext: a context already built from `configuration.tls`, to share one among many device nodes
    ///   in one process (load generators); by default the node builds its own.
    public init(configuration: DeviceConfiguration, tlsContext: TLSContext? = nil) throws(TransportError) {
        guard (1...WireLimits.nameLength).contains(configuration.deviceName.utf8.count) else {
            throw TransportError(.invalidConfiguration, "the device name must have 1 to 64 bytes of UTF-8")
        }
        guard (1...WireLimits.apiTokenLength).contains(configuration.apiToken.utf8.count) else {
            throw TransportError(.invalidConfiguration, "the API token must have 1 to 256 bytes")
        }
        self.configuration = configuration
        if let tlsContext {
            self.context = tlsContext
        } else {
            self.context = try TLSContext(configuration.tls)
        }
        if let shared = configuration.eventLoop {
            self.loop = shared
            self.ownsLoop = false
        } else {
            self.loop = try EventLoop.start(name: "rsup-device")
            self.ownsLoop = true
        }
    }

    deinit { if ownsLoop { loop.shutdown() } }

    /// Joins `code` (connectToSessionCode). Events follow on `delegate` and on the session's ``DeviceSession/events``.
    ///
    /// Throws at once when a code is already joined (waiting, request shown, or active) or the code is empty or
    /// longer than 64 bytes. Everything else (invalid code or token, expired, closed, in use, network) arrives as an
    /// error event.
    public func connect(toSessionCode code: String, delegate: DeviceSessionDelegate? = nil) throws(DeviceNodeError)
        -> DeviceSession
    {
        let trimmed = code.trimmingCharacters
        guard (1...WireLimits.sessionCodeLength).contains(trimmed.utf8.count) else {
            throw DeviceNodeError(.invalidSessionCode, "a session code has 1 to 64 bytes; got \(trimmed.utf8.count)")
        }
        return try current.withLock { current throws(DeviceNodeError) -> DeviceSession in
            if let existing = current.session, existing.isJoined {
                throw DeviceNodeError(
                    .alreadyJoined, "a session code is already joined; leave it before connecting to another")
            }
            let session = DeviceSession(node: self, code: trimmed, delegate: delegate)
            current.session = session
            session.start(handedOverCallID: handedOverCall.withLock { $0 })
            return session
        }
    }

    /// The session currently joined, if the app still holds it.
    public var currentSession: DeviceSession? { current.withLock { $0.session } }

    /// Hands over the app's own call (setupCallUUID): VoIP may run next to it.
    public func setCallUUID(_ uuid: String) {
        handedOverCall.withLock { $0 = uuid }
        currentSession?.setCallID(uuid)
    }

    /// Clears the hand-over (clearCallUUID): our VoIP ends.
    public func clearCallUUID() {
        handedOverCall.withLock { $0 = nil }
        currentSession?.clearCallID()
    }
}

extension String {
    var trimmingCharacters: String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
