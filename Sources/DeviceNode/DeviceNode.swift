#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import Synchronization
import SupportSession
public import SupportRuntime
import SupportWire
public import SupportUtilities
import SupportVocabulary

/// The device SDK's entry point: joins session codes on a supporter node, one at a time.
///
/// Three ways in, from the most to the least app-like:
/// - ``DeviceSessionModel``: a `@MainActor`, observable model a UI binds to (recommended for apps);
/// - ``join(code:delegate:)``: `async`, returns the ``DeviceSession`` once the code is online, throws ``JoinError``;
/// - ``connect(toSessionCode:delegate:)``: returns at once; everything else arrives as events.
///
/// Hold the ``DeviceSession`` (or the model): dropping the last reference to a session leaves the code and closes
/// its connection. The node itself keeps only a weak reference.
public final class DeviceNode: Sendable {
    /// The configuration the node was made with.
    public let configuration: DeviceConfiguration
    let context: TLSContext
    let loop: EventLoop
    /// The session machines' time and the deadlines of their timers on ``loop``.
    let clock: any NodeClock
    private let ownsLoop: Bool
    private let current = Mutex<WeakSession>(WeakSession())
    private let handedOverCall = Mutex<String?>(nil)

    private struct WeakSession { weak var session: DeviceSession? }

    /// Checks the configuration (TLS files, pins, names) and starts the node's event loop.
    ///
    /// - Parameters:
    ///   - loops: event loops to run on (the node takes one of them and never shuts it down); nil (the default),
    ///     the node starts a loop of its own and stops it when it goes. Tests pass an embedded loop's group and drive
    ///     keepalives, prompt timeouts and redials with `advance(by:)`.
    ///   - clock: the session's time; nil (the default) is its loop's `clock` (an embedded loop's virtual clock). A
    ///     clock given must measure the loop's monotonic time: the session's timers run on that loop.
    ///
    /// Throws ``DeviceNodeError`` with ``DeviceNodeError/Kind/invalidConfiguration`` (naming what to change): a device
    /// name or token of the wrong length; no trust for the node (give its CA, `trustRoots`, or its public-key pins:
    /// an app's sandbox has no system CA store the SDK may rely on); or a certificate, key or pin file that cannot be
    /// used (the transport's error kept as ``DeviceNodeError/underlying``).
    public convenience init(
        configuration: DeviceConfiguration, loops: EventLoopGroup? = nil, clock: (any NodeClock)? = nil
    ) throws(DeviceNodeError) {
        try self.init(configuration: configuration, tlsContext: nil, loops: loops, clock: clock)
    }

    /// As the public one, with a context already built from `configuration.tls`, shared among many device nodes in
    /// one process (load generators, tests).
    package init(
        configuration: DeviceConfiguration, tlsContext: TLSContext?, loops: EventLoopGroup? = nil,
        clock: (any NodeClock)? = nil
    ) throws(DeviceNodeError) {
        guard (1...WireLimits.nameLength).contains(configuration.deviceName.utf8.count) else {
            throw DeviceNodeError(.invalidConfiguration, "the device name must have 1 to 64 bytes of UTF-8")
        }
        guard (1...WireLimits.apiTokenLength).contains(configuration.apiToken.utf8.count) else {
            throw DeviceNodeError(.invalidConfiguration, "the API token must have 1 to 256 bytes")
        }
        guard configuration.tls.trustRoots != nil || !configuration.tls.pinnedPublicKeys.isEmpty else {
            throw DeviceNodeError(
                .invalidConfiguration,
                "no trust for the supporter node: give its CA certificate (tls trustRoots) or its public-key pins; "
                    + "the device does not fall back to the system's CA store")
        }
        self.configuration = configuration
        do throws(TransportError) {
            if let tlsContext {
                self.context = tlsContext
            } else {
                self.context = try TLSContext(configuration.tls)
            }
        } catch {
            throw DeviceNodeError(.invalidConfiguration, error.message, underlying: error)
        }
        if let shared = loops?.next() ?? configuration.eventLoop {
            self.loop = shared
            self.ownsLoop = false
        } else {
            do throws(TransportError) {
                self.loop = try EventLoop.start(name: "rsup-device")
            } catch {
                // Not the app's configuration: the system refused a descriptor or a thread.
                throw DeviceNodeError(.unavailable, "cannot start the SDK's event loop: \(error.message)", underlying: error)
            }
            self.ownsLoop = true
        }
        self.clock = clock ?? loop.clock
    }

    deinit { if ownsLoop { loop.shutdown() } }

    /// Joins `code` and returns once it is online (the supporter sees it), with the session to hold.
    ///
    /// Throws a ``JoinError`` whose ``JoinError/reason`` says why not: invalid code or token, expired, closed, in
    /// use, rate limited, network, already joined. Cancelling the calling task leaves the code. Requests that arrive
    /// once online go to `delegate` (whose ``DeviceSessionDelegate/session(_:didReceive:)`` is required) or, without
    /// one, to the session's ``DeviceSession/events``.
    public func join(code: String, delegate: DeviceSessionDelegate? = nil) async throws(JoinError) -> DeviceSession {
        let session: DeviceSession
        do {
            session = try connect(toSessionCode: code, delegate: delegate)
        } catch {
            throw JoinError(error)
        }
        try await session.waitUntilOnline()
        return session
    }

    /// Joins `code` (connectToSessionCode) and returns at once. Events follow on `delegate` and on the session's
    /// ``DeviceSession/events``; ``DeviceSession/state`` says where it stands.
    ///
    /// Throws at once when a code is already joined (waiting, request shown, or active) or the code is empty or
    /// longer than 64 bytes. Everything else (invalid code or token, expired, closed, in use, network) arrives as an
    /// error event. Without a delegate, answer requests from ``DeviceSession/events``: a request that arrives while
    /// nobody iterates them is logged as a warning, and rejected after ``DeviceConfiguration/promptTimeout``.
    public func connect(toSessionCode code: String, delegate: DeviceSessionDelegate? = nil) throws(DeviceNodeError)
        -> DeviceSession
    {
        try connect(code, delegate: delegate, mainSink: nil)
    }

    func connect(_ code: String, delegate: DeviceSessionDelegate?, mainSink: DeviceSession.MainSink?)
        throws(DeviceNodeError) -> DeviceSession
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
            let session = DeviceSession(node: self, code: trimmed, delegate: delegate, mainSink: mainSink)
            current.session = session
            session.start(handedOverCallID: handedOverCall.withLock { $0 })
            return session
        }
    }

    /// The session currently joined, if the app still holds it.
    public var currentSession: DeviceSession? { current.withLock { $0.session } }

    /// Hands over the app's own call (setupCallUUID) — the `UUID` CallKit gives — so that VoIP may run next to it.
    ///
    /// Counts at any time: at session start, and later too (an active session whose VoIP did not start because
    /// this call was running starts it now, and the supporter is told). The call observer's
    /// ``SystemCallStatus/runningCallID`` is compared with `uuid.uuidString`, ignoring case.
    public func setCallUUID(_ uuid: UUID) { setCallID(uuid.uuidString) }

    /// Hands over the app's own call by an identifier of the platform's own (not a UUID); see ``setCallUUID(_:)``.
    public func setCallID(_ id: String) {
        handedOverCall.withLock { $0 = id }
        currentSession?.setCallID(id)
    }

    /// Hands over the app's own call by its UUID string.
    @available(*, deprecated, renamed: "setCallUUID(_:)", message: "pass the UUID CallKit gives, or use setCallID(_:)")
    public func setCallUUID(_ uuid: String) { setCallID(uuid) }

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
