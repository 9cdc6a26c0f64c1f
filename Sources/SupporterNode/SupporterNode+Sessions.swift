import SupporterCore
import SupporterStore
import SupportSession
import SupportUtilities
import SupportWire
public import SupportVocabulary
public import SupporterModel

extension SupporterNode {
    private func connection(for code: String) throws(SupporterNodeError) -> DeviceConnection {
        let (connection, elsewhere) = sessions.withLock { state in
            (state.registry.holder(of: code).flatMap { state.links[$0] }, state.registry.presenceElsewhere(of: code))
        }
        guard let connection else {
            if let elsewhere {
                throw SupporterNodeError(
                    "the device on code \(Redact.code(code)) is on node \(elsewhere.node): only connect, cancel, end, ask, "
                        + "chat and messages reach it from here; do this on that node", kind: .conflict)
            }
            throw SupporterNodeError("no device is online on code \(Redact.code(code))", kind: .conflict)
        }
        return connection
    }

    /// Sends a connection request to the device on `code` as `supporterName`; returns the request id once the
    /// request is in the audit trail and on its way. The answer arrives as an event (`connected`, `rejected`,
    /// `requestTimedOut`).
    @discardableResult
    public func requestConnection(
        code: String, supporterName: String, type: ConnectionType, features: FeatureSet = [],
        mediaDescriptor: [UInt8]? = nil, by actor: AuditActor = .local
    ) async throws(SupporterNodeError) -> UInt32 {
        try await requestConnection(
            code: code, supporterName: supporterName, type: type, features: features, mediaDescriptor: mediaDescriptor,
            by: actor, assignTo: supporterName, replacingAssignee: true)
    }

    /// As the public one; the code is assigned to `assignTo` (replacing another assignee only with
    /// `replacingAssignee`). A device on another node of the cluster gets the request through that node.
    func requestConnection(
        code: String, supporterName: String, type: ConnectionType, features: FeatureSet = [],
        mediaDescriptor: [UInt8]? = nil, by actor: AuditActor, assignTo: String, replacingAssignee: Bool
    ) async throws(SupporterNodeError) -> UInt32 {
        guard (1...WireLimits.nameLength).contains(supporterName.utf8.count) else {
            throw SupporterNodeError("a supporter name has 1 to \(WireLimits.nameLength) bytes", kind: .invalid)
        }
        if !holdsDevice(on: code), let node = try await remoteHolder(of: code) {
            let command = ClusterCommand(
                kind: .request, code: code, supporterName: supporterName, connectionType: type.rawValue,
                features: ClusterCommand.encodeFeatures(features), mediaDescriptor: mediaDescriptor.map { Base64.encode($0) },
                assignTo: assignTo, replacingAssignee: replacingAssignee, actor: ClusterCommand.Actor(actor))
            let id = try await forward(command, to: node).requestID ?? 0
            logger.log(.info, "code \(Redact.code(code)): request \(id) sent as '\(supporterName)' through node \(node)")
            return id
        }
        return try await requestConnectionHere(
            code: code, supporterName: supporterName, type: type, features: features, mediaDescriptor: mediaDescriptor,
            by: actor, assignTo: assignTo, replacingAssignee: replacingAssignee)
    }

    /// Whether a device on this node holds `code`.
    func holdsDevice(on code: String) -> Bool {
        sessions.withLock { state in state.registry.holder(of: code).flatMap { state.links[$0] } != nil }
    }

    /// The request, to a device on this node.
    func requestConnectionHere(
        code: String, supporterName: String, type: ConnectionType, features: FeatureSet,
        mediaDescriptor: [UInt8]?, by actor: AuditActor, assignTo: String, replacingAssignee: Bool
    ) async throws(SupporterNodeError) -> UInt32 {
        let connection = try connection(for: code)
        // A request that names no media descriptor carries the code's own, if it has one.
        let mediaDescriptor =
            mediaDescriptor ?? sessions.withLock { $0.registry.info(code, now: clock.wallTime)?.record.mediaDescriptor }
        let (id, assigned) = try await connection.runAudited { [self] machine throws(SupporterSessionMachine.Refusal) in
            let rules = codeRules(code)
            let actions = try machine.requestConnection(
                supporterName: supporterName, type: type, features: features, now: connection.now,
                codeRules: rules, mediaDescriptor: mediaDescriptor)
            var id: UInt32 = 0
            if case .requestPending(_, let request, _) = machine.state { id = request.requestID }
            let (intents, assignee) = sessions.withLock {
                $0.registry.requestSent(
                    code: code, requestID: id, supporterName: supporterName, type: type, by: actor, now: clock.wallTime,
                    assignTo: assignTo, replacingAssignee: replacingAssignee)
            }
            return (actions, intents, (id, assignee))
        }
        // Committed: the assignment holds in memory too (a request that could not be stored threw above).
        sessions.withLock { $0.registry.requestCommitted(code: code, assignee: assigned) }
        nodeMetrics.requestsSent.increment()
        logger.log(.info, "code \(Redact.code(code)): request \(id) sent as '\(supporterName)' (\(type))")
        return id
    }

    /// Withdraws the pending request on `code` (through the node holding the device, if that is another one).
    public func abortRequest(code: String, by actor: AuditActor = .local) async throws(SupporterNodeError) {
        if !holdsDevice(on: code), let node = try await remoteHolder(of: code) {
            _ = try await forward(ClusterCommand(kind: .abort, code: code, actor: ClusterCommand.Actor(actor)), to: node)
            return
        }
        try await abortRequestHere(code: code, by: actor)
    }

    func abortRequestHere(code: String, by actor: AuditActor) async throws(SupporterNodeError) {
        let connection = try connection(for: code)
        try await connection.runAudited { [self] machine throws(SupporterSessionMachine.Refusal) in
            var id: UInt32 = 0
            if case .requestPending(_, let request, _) = machine.state { id = request.requestID }
            let actions = try machine.abortRequest()
            let intents = sessions.withLock { $0.registry.requestAborted(code: code, requestID: id, by: actor, now: clock.wallTime) }
            return (actions, intents, ())
        }
        nodeMetrics.requestAborted()
    }

    /// Ends the session (or the waiting) on `code`; the device is told `ended_by_supporter` (through the node
    /// holding it, if that is another one).
    public func endSession(code: String, text: String? = nil, by actor: AuditActor = .local)
        async throws(SupporterNodeError)
    {
        if !holdsDevice(on: code), let node = try await remoteHolder(of: code) {
            _ = try await forward(
                ClusterCommand(kind: .end, code: code, text: text, actor: ClusterCommand.Actor(actor)), to: node)
            return
        }
        try await endSessionHere(code: code, text: text, by: actor)
    }

    func endSessionHere(code: String, text: String?, by actor: AuditActor) async throws(SupporterNodeError) {
        let connection = try connection(for: code)
        try await connection.run { [self] machine throws(SupporterSessionMachine.Refusal) in
            let actions = try machine.end(reason: .endedBySupporter, text: text)
            sessions.withLock { $0.registry.endRequested(code: code, by: actor) }
            return (actions, ())
        }
    }

    /// The code's feature rules (SPEC §15.3), as they are now.
    func codeRules(_ code: String) -> FeatureRules {
        sessions.withLock { $0.registry.info(code, now: clock.wallTime)?.record.featureRules } ?? .codeDefault
    }

    /// Asks the device on `code` for a feature during the active session (SPEC §15.3), through the node holding the
    /// device if that is another one. The answer arrives as an event (`featureGranted`, `featureRefused`), and in the
    /// audit trail; a feature the code's rules deny is refused (and audited).
    public func askFeature(
        code: String, feature: Feature.ID, text: String? = nil, by actor: AuditActor = .local
    ) async throws(SupporterNodeError) {
        if !holdsDevice(on: code), let node = try await remoteHolder(of: code) {
            let command = ClusterCommand(
                kind: .ask, code: code, features: [[feature.rawValue, 1]], text: text, actor: ClusterCommand.Actor(actor))
            _ = try await forward(command, to: node)
            return
        }
        try await askFeatureHere(code: code, feature: feature, text: text, by: actor)
    }

    func askFeatureHere(
        code: String, feature: Feature.ID, text: String?, by actor: AuditActor
    ) async throws(SupporterNodeError) {
        let connection = try connection(for: code)
        let rules = codeRules(code)
        if rules.rule(for: feature) == .deny {
            // SPEC §15.3: refused here, never sent, and audited like a denial at the request.
            var details = actor.details
            details["feature"] = "\(feature)"
            details["by"] = "code_rule"
            try await appendAudit([AuditEvent(time: clock.wallTime, code: code, kind: .featureDenied, details: details)])
            throw SupporterNodeError("the code's rules deny \(feature)", kind: .conflict)
        }
        try await connection.runAudited { [self] machine throws(SupporterSessionMachine.Refusal) in
            let actions = try machine.askFeature(feature, text: text, codeRules: rules)
            var askID: UInt32 = 0
            for case .send(.featureRequest(let request)) in actions { askID = request.askID }
            let intents = sessions.withLock { state in
                state.registry.featureAsked(code: code, feature: feature, askID: askID, by: actor, now: clock.wallTime)
            }
            return (actions, intents, ())
        }
    }

    /// Withdraws the pending ask for `feature` on `code` (SPEC §15.3, FEATURE_WITHDRAW), through the node holding the
    /// device if that is another one: the device drops it and answers it refused (`aborted_by_supporter`), unless its
    /// user's answer crossed the withdrawal. Audited `feature_ask_withdrawn`. `conflict` when nothing is asked for
    /// `feature`, it was withdrawn already, or the device's protocol cannot withdraw (no ask_withdraw).
    public func withdrawFeatureAsk(code: String, feature: Feature.ID, by actor: AuditActor = .local)
        async throws(SupporterNodeError)
    {
        if !holdsDevice(on: code), let node = try await remoteHolder(of: code) {
            let command = ClusterCommand(
                kind: .withdraw, code: code, features: [[feature.rawValue, 1]], actor: ClusterCommand.Actor(actor))
            _ = try await forward(command, to: node)
            return
        }
        try await withdrawFeatureAskHere(code: code, feature: feature, by: actor)
    }

    func withdrawFeatureAskHere(code: String, feature: Feature.ID, by actor: AuditActor) async throws(SupporterNodeError) {
        let connection = try connection(for: code)
        try await connection.runAudited { [self] machine throws(SupporterSessionMachine.Refusal) in
            let (askID, actions) = try machine.withdrawAsk(feature)
            let intents = sessions.withLock { state in
                state.registry.featureAskWithdrawn(code: code, feature: feature, askID: askID, by: actor, now: clock.wallTime)
            }
            return (actions, intents, ())
        }
    }

    /// Sends chat text to the device on `code` (SPEC §15.4), through the node holding the device if that is another
    /// one; needs `chat` granted. Returns the message's id once it is recorded (`message_sent`, its text kept apart for
    /// the retention time) and on its way; its delivery is recorded (`message_delivered`) when the device acknowledges
    /// it. Refused (`busy`) while 16 messages wait for the device's acknowledgement.
    @discardableResult
    public func sendChat(code: String, text: String, by actor: AuditActor = .local) async throws(SupporterNodeError)
        -> UInt32
    {
        if !holdsDevice(on: code), let node = try await remoteHolder(of: code) {
            let answer = try await forward(
                ClusterCommand(kind: .chat, code: code, text: text, actor: ClusterCommand.Actor(actor)), to: node)
            return answer.messageID ?? 0
        }
        return try await sendChatHere(code: code, text: text, by: actor)
    }

    func sendChatHere(code: String, text: String, by actor: AuditActor) async throws(SupporterNodeError) -> UInt32 {
        try await sendRecorded(.chat(text), on: code, by: actor)
    }

    /// Sends an application message to the device on `code`, through the node holding the device if that is another
    /// one; needs `app_messages` granted. Returns its id, as ``sendChat(code:text:by:)``.
    @discardableResult
    public func sendApplicationMessage(
        code: String, contentType: String, body: [UInt8], by actor: AuditActor = .local
    ) async throws(SupporterNodeError) -> UInt32 {
        if !holdsDevice(on: code), let node = try await remoteHolder(of: code) {
            var command = ClusterCommand(kind: .message, code: code, actor: ClusterCommand.Actor(actor))
            command.contentType = contentType
            command.body = Base64.encode(body)
            return try await forward(command, to: node).messageID ?? 0
        }
        return try await sendApplicationMessageHere(code: code, contentType: contentType, body: body, by: actor)
    }

    func sendApplicationMessageHere(
        code: String, contentType: String, body: [UInt8], by actor: AuditActor
    ) async throws(SupporterNodeError) -> UInt32 {
        try await sendRecorded(.application(contentType: contentType, bytes: body), on: code, by: actor)
    }

    /// A chat line or application message to the device on this node, out at once with its id, recorded before it
    /// leaves.
    private func sendRecorded(
        _ content: SessionContent.Body, on code: String, by actor: AuditActor
    ) async throws(SupporterNodeError) -> UInt32 {
        let outgoing: MessageChannel.Outgoing
        switch content {
        case .chat(let text): outgoing = .chat(text)
        case .application(let type, let bytes): outgoing = .application(contentType: type, body: bytes)
        case .file(let name, let type, let bytes): outgoing = .file(name: name, contentType: type, bytes: bytes)
        }
        let connection = try connection(for: code)
        return try await connection.runAudited { [self] machine throws(SupporterSessionMachine.Refusal) in
            let (id, actions) = try machine.sendAtOnce(outgoing)
            let intents = sessions.withLock {
                $0.registry.messageSent(code: code, id: id, content: content, by: actor, now: clock.wallTime)
            }
            return (actions, intents, id)
        }
    }

    /// Sends a file (1 byte to 16 MiB) to the device on `code` in parts, through the node holding the device if that
    /// is another one; needs `file_share` granted. Returns its transfer id once it is recorded (`message_sent` of kind
    /// `file`, its bytes kept apart for the retention time) and its first parts are on their way; `busy` while 4 files
    /// are being sent on the session.
    @discardableResult
    public func sendFile(
        code: String, name: String, contentType: String? = nil, bytes: [UInt8], by actor: AuditActor = .local
    ) async throws(SupporterNodeError) -> UInt32 {
        if !holdsDevice(on: code), let node = try await remoteHolder(of: code) {
            var command = ClusterCommand(kind: .file, code: code, text: name, actor: ClusterCommand.Actor(actor))
            command.contentType = contentType
            command.body = Base64.encode(bytes)
            return try await forward(command, to: node).messageID ?? 0
        }
        return try await sendFileHere(code: code, name: name, contentType: contentType, bytes: bytes, by: actor)
    }

    func sendFileHere(
        code: String, name: String, contentType: String?, bytes: [UInt8], by actor: AuditActor
    ) async throws(SupporterNodeError) -> UInt32 {
        let connection = try connection(for: code)
        return try await connection.runAudited { [self] machine throws(SupporterSessionMachine.Refusal) in
            let (id, actions) = try machine.send(.file(name: name, contentType: contentType, bytes: bytes))
            let transfer = id ?? 0
            let intents = sessions.withLock {
                $0.registry.messageSent(
                    code: code, id: transfer, content: .file(name: name, contentType: contentType, bytes: bytes),
                    by: actor, now: clock.wallTime)
            }
            return (actions, intents, transfer)
        }
    }
}
