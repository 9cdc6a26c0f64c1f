import Foundation
import SupporterCore
import SupporterStore
import SupportSession
import SupportWire
import SupportRuntime
import SupportUtilities
import SupportVocabulary
import SupporterModel

/// Several nodes on one PostgreSQL database (docs/cluster.md): what this node learns from the others, and the
/// commands it carries out for their supporters.
extension SupporterNode {
    /// This node's id among the nodes sharing its database; nil for a node alone (SQLite).
    public var clusterNodeID: String? { cluster?.nodeID }

    /// Starts listening for the other nodes (when there is a cluster).
    func startClusterListener() {
        guard let cluster else { return }
        cluster.watchPresence(
            PresenceWatch(
                held: { [weak self] in self?.sessions.withLock { $0.registry.heldCodes() } ?? ([], []) },
                lost: { [weak self] codes in self?.presenceLost(codes) }))
        if !cluster.start(logger: logger, timeout: .seconds(5), deliver: { [weak self] news in self?.received(news) }) {
            logger.log(.warning, "cluster: not listening to the other nodes yet; still trying")
        }
        logger.log(.info, "cluster: this node is \(cluster.nodeID); presence lease \(cluster.presenceLease)")
    }

    func stopClusterListener() { cluster?.stop() }

    /// What the listener read; on its thread, so only brief in-memory work here (commands run in tasks).
    func received(_ news: ClusterNews) {
        let now = clock.wallTime
        switch news {
        case .code(let code, let record):
            let endHere = sessions.withLock { $0.registry.codeChangedElsewhere(code, record: record, now: now) }
            if endHere, let record { endFinishedElsewhere(code, closed: record.isClosed) }
        case .codeSnapshot(let records):
            // Codes missing from the snapshot are kept: one created here may not have committed yet. A code deleted
            // elsewhere while this node was not listening stays listed here until it restarts (deleting it needs no
            // device on it, so nothing is served wrongly).
            let ending = sessions.withLock { state -> [(String, Bool)] in
                var ending: [(String, Bool)] = []
                for record in records where state.registry.codeChangedElsewhere(record.code, record: record, now: now) {
                    ending.append((record.code, record.isClosed))
                }
                return ending
            }
            for (code, closed) in ending { endFinishedElsewhere(code, closed: closed) }
        case .presence(let code, let presence):
            // Read after the other node's commit: its claim stands, so a session this node still holds on the code
            // is one it lost (its lease lapsed: it was starved, frozen or cut off from the database).
            let holder = sessions.withLock { state -> DeviceConnection? in
                state.registry.setPresenceElsewhere(presence, on: code)
                return presence == nil ? nil : state.registry.holder(of: code).flatMap { state.links[$0] }
            }
            holder?.sessionTakenElsewhere(code: code)
        case .presenceSnapshot(let all):
            let holders = sessions.withLock { state -> [(String, DeviceConnection)] in
                state.registry.replacePresenceElsewhere(all)
                return all.keys.compactMap { code in
                    state.registry.holder(of: code).flatMap { state.links[$0] }.map { (code, $0) }
                }
            }
            for (code, connection) in holders { connection.sessionTakenElsewhere(code: code) }
        case .account(let login, let record):
            people.withLock { state in
                state.accounts[login] = record
                if record?.state != .active { state.loginSessions.closeAll(of: login) }
            }
        case .loginSession(let digest, let record):
            people.withLock { state in
                if let record {
                    // Read again after a reconnection: a session held here keeps its own idle time.
                    if !state.loginSessions.contains(digest: digest) { state.loginSessions.load(record, now: now) }
                } else {
                    state.loginSessions.forget(digest: digest)
                }
            }
        case .loginSessionSnapshot(let records):
            let kept = Set(records.map(\.digest))
            people.withLock { state in
                // Sessions begun here in the last minute may not be committed yet; the rest are as stored.
                state.loginSessions.retain(digests: kept, orBegunAfter: now.addingTimeInterval(-60))
                for record in records where !state.loginSessions.contains(digest: record.digest) {
                    state.loginSessions.load(record, now: now)
                }
            }
        case .loginSessionsEnded(let login):
            people.withLock { $0.loginSessions.closeAll(of: login) }
        case .token(let id, let digest, let record):
            sessions.withLock { state in
                if let digest, let record, record.revokedAt == nil {
                    state.tokens.add(digest: digest, record: record)
                } else {
                    _ = state.tokens.remove(id: id)
                }
            }
        case .backoff(let key, let row):
            sessions.withLock { $0.registry.backoffChangedElsewhere(key: key, row: row) }
        case .command(let id, let origin, let command):
            guard let cluster else { return }
            Task {
                // Taken in the database first: a command its sender withdrew (it waited in vain) is never carried out.
                guard await cluster.take(id, command) else { return }
                let answer = await self.carryOut(command)
                await cluster.answer(id, to: origin, answer)
            }
        case .answer(let id, let answer, let reread):
            cluster?.answered(id, answer, onlyIfWaiting: reread)
        }
    }

    /// Renewal found that other nodes claimed these codes, which this node held: their sessions are dropped here.
    private func presenceLost(_ codes: [String]) {
        let holders = sessions.withLock { state in
            codes.compactMap { code in state.registry.holder(of: code).flatMap { state.links[$0] }.map { (code, $0) } }
        }
        for (code, connection) in holders { connection.sessionTakenElsewhere(code: code) }
    }

    /// Another node closed or expired a code whose device is here: its session ends as a local close would.
    private func endFinishedElsewhere(_ code: String, closed: Bool) {
        guard let connection = sessions.withLock({ state in state.registry.holder(of: code).flatMap { state.links[$0] } })
        else { return }
        let reason: ReasonCode = closed ? .sessionCodeClosed : .sessionCodeExpired
        Task {
            _ = try? await connection.run { machine throws(SupporterSessionMachine.Refusal) in
                (try machine.end(reason: reason), ())
            }
        }
    }

    /// A command from another node's supporter, carried out as if asked here.
    private func carryOut(_ command: ClusterCommand) async -> ClusterCommandAnswer {
        let actor = command.actor.auditActor
        do throws(SupporterNodeError) {
            switch command.kind {
            case .request:
                guard let name = command.supporterName,
                    let type = command.connectionType.flatMap(ConnectionType.init(rawValue:))
                else { return ClusterCommandAnswer(SupporterNodeError("the command lacks its request", kind: .invalid)) }
                let id = try await requestConnectionHere(
                    code: command.code, supporterName: name, type: type, features: command.featureSet,
                    mediaDescriptor: command.mediaDescriptor.flatMap { Base64.decode($0) }, by: actor,
                    assignTo: command.assignTo ?? name, replacingAssignee: command.replacingAssignee ?? true)
                return ClusterCommandAnswer(requestID: id)
            case .abort:
                try await abortRequestHere(code: command.code, by: actor)
            case .end:
                try await endSessionHere(code: command.code, text: command.text, by: actor)
            case .ask:
                guard let feature = command.features?.first.flatMap({ $0.first }).map(Feature.ID.init(rawValue:)) else {
                    return ClusterCommandAnswer(SupporterNodeError("the command lacks its feature", kind: .invalid))
                }
                try await askFeatureHere(code: command.code, feature: feature, text: command.text, by: actor)
            case .withdraw:
                guard let feature = command.features?.first.flatMap({ $0.first }).map(Feature.ID.init(rawValue:)) else {
                    return ClusterCommandAnswer(SupporterNodeError("the command lacks its feature", kind: .invalid))
                }
                try await withdrawFeatureAskHere(code: command.code, feature: feature, by: actor)
            case .chat:
                guard let text = command.text else {
                    return ClusterCommandAnswer(SupporterNodeError("the command lacks its text", kind: .invalid))
                }
                var answer = ClusterCommandAnswer()
                answer.messageID = try await sendChatHere(code: command.code, text: text, by: actor)
                return answer
            case .message:
                guard let contentType = command.contentType, let body = command.body.flatMap({ Base64.decode($0) }) else {
                    return ClusterCommandAnswer(SupporterNodeError("the command lacks its message", kind: .invalid))
                }
                var answer = ClusterCommandAnswer()
                answer.messageID = try await sendApplicationMessageHere(
                    code: command.code, contentType: contentType, body: body, by: actor)
                return answer
            case .file:
                guard let name = command.text, let body = command.body.flatMap({ Base64.decode($0) }) else {
                    return ClusterCommandAnswer(SupporterNodeError("the command lacks its file", kind: .invalid))
                }
                var answer = ClusterCommandAnswer()
                answer.messageID = try await sendFileHere(
                    code: command.code, name: name, contentType: command.contentType, bytes: body, by: actor)
                return answer
            case .vacate:
                if sessions.withLock({ $0.registry.holdsDevice(on: command.code) }) {
                    throw SupporterNodeError("a device is on this code", kind: .conflict)
                }
                // The device left here: once every job submitted before this one has committed, the release of its
                // code included, the code is free for the asking node.
                do throws(StoreError) { try await store.write([]) } catch { throw SupporterNodeError(store: error) }
            }
            return ClusterCommandAnswer()
        } catch {
            return ClusterCommandAnswer(error)
        }
    }

    /// A device is about to register on `code`, which `holder` held as this node last heard: asks it to confirm that
    /// its device is gone (``ClusterCommand/Kind/vacate``), waiting at most ``ClusterCommand/vacateTimeout``. When it
    /// is, the code is free in this node's view too, and the claim that follows finds the row released — so a device
    /// that leaves one node and joins through another at once is never refused because of its own presence.
    func askToVacate(_ code: String, holder: String) async {
        guard let cluster else { return }
        let command = ClusterCommand(kind: .vacate, code: code, actor: ClusterCommand.Actor(.node))
        guard let answer = try? await cluster.send(command, to: holder, timeout: ClusterCommand.vacateTimeout),
            answer.failure == nil
        else { return }
        sessions.withLock { state in
            if state.registry.presenceElsewhere(of: code)?.node == holder { state.registry.setPresenceElsewhere(nil, on: code) }
        }
    }

    /// The node holding the device on `code` when it is another node of the cluster (asked of the database, not
    /// the cached view, so that a command never goes to a node whose lease ran out).
    func remoteHolder(of code: String) async throws(SupporterNodeError) -> String? {
        guard let cluster else { return nil }
        return try await cluster.holder(of: code)?.node
    }

    /// Sends `command` to the node holding its code; throws what it met there.
    func forward(_ command: ClusterCommand, to node: String) async throws(SupporterNodeError) -> ClusterCommandAnswer {
        guard let cluster else { throw SupporterNodeError("no device is online on code \(Redact.code(command.code))", kind: .conflict) }
        let answer = try await cluster.send(command, to: node, timeout: ClusterCommand.answerTimeout)
        if let failure = answer.failure { throw failure }
        return answer
    }
}

extension SupporterNode {
    /// A RESUME for a code no connection here holds: if the node that held it died (its lease ran out) and the
    /// device presents one of the stored secrets, the session continues here; if a live node holds it, the device
    /// is told to try again (it redials, and reaches that node or this one once the lease ran out).
    func takeOver(_ resume: Resume, extensions: ProtocolExtensions, peerMaxFrameSize: Int, loop: EventLoop) async
        -> DeviceConnection.ResumeDecision
    {
        let unknown = DeviceConnection.ResumeDecision.rejected(
            ResumeResult(reason: .resumeRejected, text: "no resumable session for that code and secret"))
        guard let cluster else { return unknown }
        let holding: ClusterHolding
        do throws(SupporterNodeError) {
            holding = try await cluster.holding(of: resume.sessionCode)
        } catch {
            return .rejected(
                ResumeResult(reason: .internalError, text: "the node cannot read its store; try again", retryAfterMilliseconds: 1_000))
        }
        switch holding {
        case .nobody, .lapsed(_, nil):
            return unknown
        case .held(let node, let remaining):
            let milliseconds = UInt32(min(max(remaining.components.seconds * 1000 + 250, 250), 30_000))
            logger.log(.info, "code \(Redact.code(resume.sessionCode)): a resume arrived here while node \(node) holds it")
            return .rejected(
                ResumeResult(
                    reason: .internalError, text: "another node holds this session; try again",
                    retryAfterMilliseconds: milliseconds))
        case .lapsed(let node, let stored?):
            return continueSession(
                stored, previousNode: node, why: node == cluster.nodeID ? "node_restarted" : "node_lost", resume,
                extensions: extensions, peerMaxFrameSize: peerMaxFrameSize, now: loop.now)
        }
    }

    /// Decides `resume` against a session as stored (by another node, or by this node's previous process): the
    /// secret must match a stored digest, then the rebuilt machine decides with SPEC §15.5's reconciliation.
    func continueSession(
        _ stored: StoredResumeState, previousNode: String, why: String, _ resume: Resume, extensions: ProtocolExtensions,
        peerMaxFrameSize: Int, now: Deadline
    ) -> DeviceConnection.ResumeDecision {
        guard stored.code == resume.sessionCode, stored.accepts(secret: resume.resumeSecret),
            let snapshot = stored.snapshot(secret: resume.resumeSecret)
        else {
            return .rejected(ResumeResult(reason: .resumeRejected, text: "no resumable session for that code and secret"))
        }
        let machine = SupporterSessionMachine(
            restoring: snapshot, secret: resume.resumeSecret, requestTimeout: configuration.requestTimeout, now: now)
        switch machine.resumed(by: resume, extensions: extensions, peerMaxFrameSize: peerMaxFrameSize, now: now) {
        case .accepted(let next, let actions):
            return .takenOver(next, actions, code: resume.sessionCode, previousNode: previousNode, why: why)
        case .rejected(let result, _):
            return .rejected(result)
        }
    }
}
