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
        try await connection.run { machine throws(SupporterSessionMachine.Refusal) in
            (try machine.askFeature(feature, text: text, codeRules: rules), ())
        }
    }

    /// Sends chat text to the device on `code` (SPEC §15.4), through the node holding the device if that is another
    /// one; needs `chat` granted. Returns once the text is queued for the device (message contents are not
    /// audited); its delivery arrives on the holding node as an event (`messageDelivered`).
    public func sendChat(code: String, text: String, by actor: AuditActor = .local) async throws(SupporterNodeError) {
        if !holdsDevice(on: code), let node = try await remoteHolder(of: code) {
            _ = try await forward(
                ClusterCommand(kind: .chat, code: code, text: text, actor: ClusterCommand.Actor(actor)), to: node)
            return
        }
        try await sendChatHere(code: code, text: text)
    }

    func sendChatHere(code: String, text: String) async throws(SupporterNodeError) {
        let connection = try connection(for: code)
        try await connection.run { machine throws(SupporterSessionMachine.Refusal) in (try machine.sendChat(text), ()) }
    }

    /// Sends an application message to the device on `code`, through the node holding the device if that is another
    /// one; needs `app_messages` granted. Contents are not audited.
    public func sendApplicationMessage(
        code: String, contentType: String, body: [UInt8], by actor: AuditActor = .local
    ) async throws(SupporterNodeError) {
        if !holdsDevice(on: code), let node = try await remoteHolder(of: code) {
            var command = ClusterCommand(kind: .message, code: code, actor: ClusterCommand.Actor(actor))
            command.contentType = contentType
            command.body = Base64.encode(body)
            _ = try await forward(command, to: node)
            return
        }
        try await sendApplicationMessageHere(code: code, contentType: contentType, body: body)
    }

    func sendApplicationMessageHere(code: String, contentType: String, body: [UInt8]) async throws(SupporterNodeError) {
        let connection = try connection(for: code)
        try await connection.run { machine throws(SupporterSessionMachine.Refusal) in
            (try machine.send(.application(contentType: contentType, body: body)).actions, ())
        }
    }

    /// Sends a file (at most 16 MiB) to the device on `code` in parts; needs `file_share` granted.
    @discardableResult
    public func sendFile(code: String, name: String, contentType: String? = nil, bytes: [UInt8])
        async throws(SupporterNodeError) -> UInt32
    {
        let connection = try connection(for: code)
        return try await connection.run { machine throws(SupporterSessionMachine.Refusal) in
            let (id, actions) = try machine.send(.file(name: name, contentType: contentType, bytes: bytes))
            return (actions, id ?? 0)
        }
    }
}
