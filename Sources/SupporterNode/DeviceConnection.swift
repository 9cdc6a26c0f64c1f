import SupportSession
import SupportTransport

/// One device's link on the supporter node: its session machine, driven on the link's loop.
final class DeviceConnection: FramedLinkDelegate, @unchecked Sendable {
    // @unchecked: `machine`, `timer` and `deviceName` are used only on `link.loop` (every entry point hops there);
    // `node` is a weak reference set once.
    let link: FramedLink
    private weak var node: SupporterNode?
    private var machine: SupporterSessionMachine
    private var timer: LoopTimer?
    private(set) var deviceName: String?
    /// The code this device joined, from `deviceOnline` until `ended`.
    private(set) var joinedCode: String?
    let sourceAddress: String

    init(link: FramedLink, node: SupporterNode, requestTimeout: Duration) {
        self.link = link
        self.node = node
        self.machine = SupporterSessionMachine(requestTimeout: requestTimeout)
        self.sourceAddress = link.peerAddress?.host ?? "unknown"
    }

    static func now() -> Duration { Deadline.now().sinceOrigin }

    // MARK: FramedLinkDelegate (on the loop)

    func linkDidOpen(_ link: FramedLink, parameters: LinkParameters) {
        deviceName = parameters.peerName
        node?.logger.log(.debug, "device '\(parameters.peerName)' connected from \(sourceAddress)")
    }

    func link(_ link: FramedLink, didReceive message: Message) {
        guard let node else { return }
        let actions = machine.received(message, now: Self.now()) { register in
            node.authorize(register, from: self)
        }
        perform(actions)
    }

    func linkDidClose(_ link: FramedLink, reason: LinkCloseReason) {
        timer?.cancel()
        timer = nil
        perform(machine.linkClosed(reason: reason.reasonCode, text: reason.description))
        node?.connectionClosed(self)
    }

    // MARK: commands (hop to the loop)

    /// Runs `body` on the loop with the machine, and returns its result to an async caller.
    func run<Result: Sendable>(
        _ body: @escaping @Sendable (inout SupporterSessionMachine) throws(SupporterSessionMachine.Refusal) -> (
            [SupporterSessionMachine.Action], Result
        )
    ) async throws(SupporterNodeError) -> Result {
        let outcome: Swift.Result<Result, SupporterNodeError> = await withCheckedContinuation { continuation in
            link.loop.execute { [self] in
                do throws(SupporterSessionMachine.Refusal) {
                    let (actions, result) = try body(&self.machine)
                    self.perform(actions)
                    continuation.resume(returning: .success(result))
                } catch {
                    continuation.resume(returning: .failure(SupporterNodeError(error.description)))
                }
            }
        }
        return try outcome.get()
    }

    private func perform(_ actions: [SupporterSessionMachine.Action]) {
        for action in actions {
            switch action {
            case .send(let message):
                do { try link.send(message) } catch {
                    node?.logger.log(.warning, "cannot send \(message.frameType.specName) to \(sourceAddress): \(error)")
                }
            case .report(let event):
                if case .deviceOnline(let code, _) = event { joinedCode = code }
                if let code = joinedCode ?? event.code {
                    node?.report(
                        SupporterNodeEvent(code: code, event: event, deviceName: deviceName), sourceAddress: sourceAddress)
                }
                if case .ended = event, let code = joinedCode {
                    joinedCode = nil
                    node?.detach(self, code: code)
                }
            case .protocolViolation(let text):
                node?.logger.log(.warning, "device at \(sourceAddress) broke the protocol: \(text)")
                link.close(reason: .protocolError, text: text)
            }
        }
        if let joinedCode { node?.updateLiveState(code: joinedCode, connection: self, state: machine.state) }
        armTimer()
    }

    private func armTimer() {
        timer?.cancel()
        timer = nil
        guard let deadline = machine.nextDeadline else { return }
        let at = Deadline(sinceOrigin: deadline)
        timer = link.loop.schedule(at: at) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.perform(self.machine.tick(now: Self.now()))
        }
    }
}

extension SupporterSessionEvent {
    /// The code an event names, for events that carry one.
    var code: String? {
        switch self {
        case .deviceOnline(let code, _), .registrationRefused(let code, _): code
        default: nil
        }
    }
}
