import DeviceNode
import Foundation
import Synchronization
import SupporterNode
import TestSupport
import Testing
import SupportRuntime
import SupportSession
import SupportUtilities
import SupportWire
import SampleAppModel
import SupportPostgres
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupportVocabulary

/// Collects events from any thread and lets a test wait for one. A waiter is woken by the append that satisfies it
/// (no polling), so a test can time what it waits for.
final class EventLog<Event: Sendable>: Sendable {
    private struct Waiter {
        let predicate: @Sendable (Event) -> Bool
        let continuation: CheckedContinuation<Event?, Never>
    }
    private struct State {
        var events: [Event] = []
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }
    private let state = Mutex(State())

    func append(_ event: Event) {
        let woken = state.withLock { state -> [Waiter] in
            state.events.append(event)
            let matched = state.waiters.filter { $0.value.predicate(event) }
            for id in matched.keys { state.waiters[id] = nil }
            return Array(matched.values)
        }
        for waiter in woken { waiter.continuation.resume(returning: event) }
    }

    var all: [Event] { state.withLock { $0.events } }

    /// Waits until an event satisfies `predicate`; returns it, or nil after `timeout` (a deadline: it returns the
    /// moment the event is appended).
    func waitFor(
        timeout: Duration = waitDeadline, _ predicate: @escaping @Sendable (Event) -> Bool
    ) async -> Event? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Event?, Never>) in
            let id = state.withLock { state -> Int? in
                if let found = state.events.first(where: predicate) {
                    continuation.resume(returning: found)
                    return nil
                }
                let id = state.nextWaiter
                state.nextWaiter += 1
                state.waiters[id] = Waiter(predicate: predicate, continuation: continuation)
                return id
            }
            guard let id else { return }
            _ = afterDeadline(timeout) {
                let expired = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                expired?.continuation.resume(returning: nil)
            }
        }
    }

    /// Whether any event so far satisfies `predicate` (for "nothing happened" checks, made after a later event that
    /// proves the one in question would have been seen by now).
    func contains(_ predicate: (Event) -> Bool) -> Bool {
        state.withLock { $0.events.contains(where: predicate) }
    }
}

/// A supporter node on loopback with real certificates, and device nodes that reach it.
final class NodeHarness: Sendable {
    let certificates: TestCertificates
    let supporter: SupporterNode
    let token: String
    let port: UInt16
    let supporterEvents = EventLog<SupporterNodeEvent>()
    /// The supporter node's log lines (debug and up) when made with `captureLog`, else none: the events a test can
    /// wait for that the node announces only in its log (a connection's end).
    let supporterLog = EventLog<String>()
    let deviceLoop: EventLoop
    private let collector: Task<Void, Never>

    init(
        keepalive: Duration = .seconds(15), requestTimeout: Duration = .seconds(90),
        policy: CodeRegistry.Policy = CodeRegistry.Policy(), registrationDeadline: Duration = .seconds(10),
        storePath: String = ":memory:", storeBackend: StoreBackend = .sqlite, storeQueueCapacity: Int = 65_536,
        extensions: ProtocolExtensions = [.accessControl, .sessionMessages], resumeGrace: Duration = .seconds(30),
        presenceLease: Duration = .seconds(10), captureLog: Bool = false,
        wrappingStore: (any StoreEngine) -> any StoreEngine = { $0 },
        wrappingCluster: (any ClusterBus) -> any ClusterBus = { $0 }
    ) throws {
        certificates = try TestCertificates.make()
        var configuration = SupporterNodeConfiguration(
            tls: .makeServerConfiguration(
                certificateChain: .file(certificates.server.certificatePath),
                privateKey: .file(certificates.server.keyPath)))
        configuration.port = 0
        configuration.keepaliveInterval = keepalive
        configuration.requestTimeout = requestTimeout
        configuration.registryPolicy = policy
        configuration.registrationDeadline = registrationDeadline
        configuration.extensions = extensions
        configuration.resumeGrace = resumeGrace
        configuration.logger = NodeHarness.logger(prefix: "supporter", capturingInto: captureLog ? supporterLog : nil)
        var store = StoreConfiguration(backend: storeBackend, path: storePath)
        store.queueCapacity = storeQueueCapacity
        store.presenceLease = presenceLease
        store.logger = configuration.logger
        let opened = try store.open()
        supporter = try SupporterNode(
            configuration: configuration, store: wrappingStore(opened.engine),
            cluster: opened.cluster.map(wrappingCluster))
        try supporter.start()
        port = supporter.port ?? 0
        token = try supporter.issueAPIToken()
        deviceLoop = try EventLoop.start(name: "test-devices")
        let log = supporterEvents
        let events = supporter.events
        collector = Task {
            for await event in events { log.append(event) }
        }
    }

    func deviceConfiguration(
        name: String = "Pixel 8", token: String? = nil, capabilities: FeatureSet = [Feature(.screenShare), Feature(.voip)],
        promptTimeout: Duration = .seconds(60), keepalive: Duration = .seconds(15), port: UInt16? = nil,
        callObserver: any CallObserver = NoCallObserver(), extensions: ProtocolExtensions = .all,
        rules: FeatureRules = .deviceDefault
    ) -> DeviceConfiguration {
        var configuration = DeviceConfiguration(
            host: "127.0.0.1", port: port ?? self.port,
            tls: .makeClientConfiguration(trustRoots: .file(certificates.caPath)), apiToken: token ?? self.token,
            deviceName: name)
        configuration.capabilities = capabilities
        configuration.promptTimeout = promptTimeout
        configuration.keepaliveInterval = keepalive
        configuration.callObserver = callObserver
        configuration.extensions = extensions
        configuration.accessRules = rules
        configuration.eventLoop = deviceLoop
        configuration.logger = NodeHarness.logger(prefix: "device")
        return configuration
    }

    /// Logs to stderr when RSUP_TEST_LOG is set (debugging a failing test).
    static func logger(prefix: String, capturingInto captured: EventLog<String>? = nil) -> NodeLogger {
        let printing = ProcessInfo.processInfo.environment["RSUP_TEST_LOG"] != nil
        guard printing || captured != nil else { return .disabled }
        return NodeLogger(minimumLevel: printing ? .trace : .debug) { level, message in
            if level >= .debug { captured?.append(message) }
            if printing { FileHandle.standardError.write(Data("[\(prefix)] \(level): \(message)\n".utf8)) }
        }
    }

    func device(_ configuration: DeviceConfiguration? = nil) throws -> DeviceNode {
        try DeviceNode(configuration: configuration ?? deviceConfiguration())
    }

    /// Waits for the supporter's event on `code` that `predicate` accepts.
    func supporterEvent(
        on code: String, timeout: Duration = waitDeadline, _ predicate: @escaping @Sendable (SupporterSessionEvent) -> Bool
    ) async -> SupporterSessionEvent? {
        await supporterEvents.waitFor(timeout: timeout) { $0.code == code && predicate($0.event) }?.event
    }

    /// Asks for another connection on `code`, has `device` refuse it and waits for the supporter to see the refusal
    /// (or the device's prompt timing out): an event after everything the device sent before it.
    func laterRequestIsRefused(code: String, device: JoinedDevice) async -> Bool {
        guard let later = try? await supporter.requestConnection(code: code, supporterName: "Later", type: .screenShare),
            await device.event({
                if case .connectionRequest(let info) = $0 { return info.requestID == later }
                return false
            }) != nil
        else { return false }
        device.session.answer(requestID: later, allow: false)
        return await supporterEvent(on: code) {
            if case .rejected(requestID: later, _) = $0 { return true }
            return false
        } != nil
    }

    func shutdown() {
        supporter.shutdown()
        collector.cancel()
        deviceLoop.shutdown()
        certificates.remove()
    }
}

/// A device session and the events it reported.
final class JoinedDevice: Sendable {
    let node: DeviceNode
    let session: DeviceSession
    let events = EventLog<DeviceSessionEvent>()
    private let collector: Task<Void, Never>

    init(node: DeviceNode, code: String) throws {
        self.node = node
        session = try node.connect(toSessionCode: code)
        let log = events
        let stream = session.events
        collector = Task {
            for await event in stream { log.append(event) }
        }
    }

    func online() async -> Bool {
        await events.waitFor {
            if case .sessionCodeOnline = $0 { return true }
            return false
        } != nil
    }

    func request() async -> ConnectionRequestInfo? {
        guard case .connectionRequest(let info) = await events.waitFor({
            if case .connectionRequest = $0 { return true }
            return false
        }) else { return nil }
        return info
    }

    func event(_ predicate: @escaping @Sendable (DeviceSessionEvent) -> Bool) async -> DeviceSessionEvent? {
        await events.waitFor(predicate)
    }
}

/// A call observer whose answer a test sets.
final class FakeCallObserver: CallObserver {
    private let status = Mutex<SystemCallStatus>(.idle)
    func set(_ value: SystemCallStatus) { status.withLock { $0 = value } }
    func currentCall() -> SystemCallStatus { status.withLock { $0 } }
}

/// Every node test suite runs inside this one, one suite at a time: the suites share two cores, and a 1,000-device
/// run next to a keepalive test would measure the machine instead of the nodes.
@Suite(.serialized, .timeLimit(.minutes(5))) struct NodeIntegration {}
