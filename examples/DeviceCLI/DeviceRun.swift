import CLIKit
import DeviceNode
import Dispatch
import Foundation
import Synchronization
import SupportSession
import SupportWire
import SupportRuntime
import SupportUtilities
import SupportVocabulary

/// One run of `rsup-device connect`: join, show events, answer requests, leave on Ctrl-C.
struct DeviceRun {
    enum AnswerMode { case ask, allow, reject }

    let node: DeviceNode
    let console: Console
    let mode: AnswerMode
    let target: HostPort

    func run(code: String) throws(CLIError) -> Int32 {
        let session: DeviceSession
        do { session = try node.connect(toSessionCode: code) } catch { throw .failure(error.description) }
        console.event("connecting", "connecting to \(target) for code \(code)", ["code": code, "node": target.description])
        let outcome = Locked<Int32?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let pending = Locked<ConnectionRequestInfo?>(nil)
        let pendingAsk = Locked<FeatureAsk?>(nil)

        let signals = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler {
                console.event("leaving", "leaving (\(number == SIGINT ? "Ctrl-C" : "SIGTERM"))")
                session.leave()
            }
            source.resume()
            return source
        }
        // The terminal: y/n answers a pending request or feature ask; say, send, revoke, leave.
        Thread {
            while let line = readLine() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                let word = trimmed.lowercased()
                if word == "leave" || word == "quit" {
                    session.leave()
                    return
                }
                if command(trimmed, session: session) { continue }
                if let ask = pendingAsk.withLock({ $0 }), mode == .ask || pending.withLock({ $0 }) == nil {
                    guard word == "y" || word == "yes" || word == "n" || word == "no" || word.isEmpty else {
                        hint("answer y or n")
                        continue
                    }
                    session.answerFeature(askID: ask.askID, grant: word.hasPrefix("y"))
                    pendingAsk.withLock { $0 = nil }
                    continue
                }
                guard mode == .ask, let request = pending.withLock({ $0 }) else {
                    if !word.isEmpty { hint("nothing is waiting for an answer; say TEXT, send FILE, revoke FEATURE or leave") }
                    continue
                }
                do {
                    // The outcome says whether the answer counted (the supporter may have withdrawn meanwhile).
                    let console = self.console
                    let report: @Sendable (AnswerOutcome) -> Void = { outcome in
                        switch outcome {
                        case .sent, .sentWithResume: break
                        case .notPending:
                            console.event(
                                "answer_ignored", "request \(request.requestID) is no longer waiting: answer ignored",
                                ["request_id": Int(request.requestID)])
                        case .sessionOver:
                            console.event("answer_ignored", "the session is over: answer ignored", [:])
                        }
                    }
                    if word == "y" || word == "yes" {
                        session.answer(requestID: request.requestID, .allow, completion: report)
                    } else if word == "n" || word == "no" || word.isEmpty {
                        session.answer(requestID: request.requestID, .reject, completion: report)
                    } else {
                        hint("answer y or n")
                        continue
                    }
                    pending.withLock { $0 = nil }
                }
            }
        }.start()

        let events = session.events
        Task {
            for await event in events {
                handle(event, session: session, pending: pending, pendingAsk: pendingAsk, outcome: outcome)
            }
            finished.signal()
        }
        finished.wait()
        withExtendedLifetime(signals) {}
        return outcome.withLock { $0 } ?? 0
    }

    private func handle(
        _ event: DeviceSessionEvent, session: DeviceSession, pending: Locked<ConnectionRequestInfo?>,
        pendingAsk: Locked<FeatureAsk?>, outcome: Locked<Int32?>
    ) {
        switch event {
        case .sessionCodeOnline(_, let waitingMessage):
            console.event(
                "online", "session code online: waiting for a supporter" + (waitingMessage.map { " — \($0)" } ?? ""),
                waitingMessage.map { ["waiting_message": $0] } ?? [:])
        case .connectionRequest(let info):
            let type = info.connectionType == .screenShare ? "screen share" : "Assist AR"
            console.event(
                "request", "supporter '\(info.supporterName)' asks to connect (\(type))",
                ["request_id": Int(info.requestID), "supporter": info.supporterName, "type": "\(info.connectionType)"])
            if !info.featuresToConfirm.isEmpty || !info.grantedWithConnection.isEmpty || !info.deniedFeatures.isEmpty {
                console.event(
                    "request_features",
                    "features: granted if you allow: \(Self.names(FeatureSet(Array(info.grantedWithConnection) + Array(info.featuresToConfirm))))"
                        + (info.deniedFeatures.isEmpty ? "" : "; denied: \(Self.names(info.deniedFeatures))"),
                    [
                        "granted": Self.names(info.grantedWithConnection), "to_confirm": Self.names(info.featuresToConfirm),
                        "denied": Self.names(info.deniedFeatures),
                    ])
            }
            switch mode {
            case .allow:
                console.event("answer", "allowed (--auto-accept)", ["decision": "allow"])
                session.answer(requestID: info.requestID, allow: true)
            case .reject:
                console.event("answer", "rejected (--auto-reject)", ["decision": "reject"])
                session.answer(requestID: info.requestID, allow: false)
            case .ask:
                pending.withLock { $0 = info }
                hint("allow? [y/N] ")
            }
        case .connectionRequestAborted(let id, let reason):
            pending.withLock { $0 = nil }
            console.event("request_aborted", "the supporter cancelled request \(id) (\(reason))", ["request_id": Int(id)])
        case .connectionRequestTimedOut(let id):
            pending.withLock { $0 = nil }
            console.event("request_timed_out", "request \(id) was not answered in time: rejected", ["request_id": Int(id)])
        case .supporterConnected(let name, let type, let details):
            let words = type == .screenShare ? "screen share" : "Assist AR"
            var fields: [String: any Sendable] = ["supporter": name]
            var text = "supporter '\(name)' connected (\(words))"
            if let granted = details.grantedFeatures {
                text += "; granted: \(Self.names(granted))"
                fields["granted"] = Self.names(granted)
            }
            if let media = details.mediaDescriptor {
                text += "; media descriptor of \(media.count) bytes"
                fields["media_descriptor_bytes"] = media.count
            }
            console.event("connected", text, fields)
        case .featureRequested(let ask):
            pendingAsk.withLock { $0 = ask }
            console.event(
                "feature_ask", "the supporter asks for \(ask.feature)" + (ask.text.map { ": \($0)" } ?? ""),
                ["ask_id": Int(ask.askID), "feature": "\(ask.feature)"])
            switch mode {
            case .allow: session.answerFeature(askID: ask.askID, grant: true)
            case .reject: session.answerFeature(askID: ask.askID, grant: false)
            case .ask: hint("grant \(ask.feature)? [y/N] ")
            }
        case .featureGranted(let feature):
            console.event("feature_granted", "\(feature) granted", ["feature": "\(feature)"])
        case .featureRefused(let feature, let reason):
            pendingAsk.withLock { $0 = nil }
            console.event("feature_refused", "\(feature) not granted (\(reason))", ["feature": "\(feature)", "reason": "\(reason)"])
        case .featureRevoked(let feature):
            console.event("feature_revoked", "\(feature) revoked", ["feature": "\(feature)"])
        case .messageReceived(let delivery):
            switch delivery {
            case .chat(let id, let text):
                console.event("chat", "supporter: \(text)", ["message_id": Int(id), "text": text])
            case .application(let id, let type, let body):
                console.event(
                    "app_message", "application message (\(type), \(body.count) bytes)",
                    ["message_id": Int(id), "content_type": type, "bytes": body.count])
            case .fileProgress(let transfer, let name, let received, let total):
                console.event(
                    "file_progress", "receiving '\(name)': \(received) of \(total) bytes",
                    ["transfer_id": Int(transfer), "received": Int(received), "total": Int(total)])
            case .file(let transfer, let name, _, let bytes):
                console.event(
                    "file", "received file '\(name)' (\(bytes.count) bytes)",
                    ["transfer_id": Int(transfer), "name": name, "bytes": bytes.count])
            }
        case .messageDelivered(let id):
            console.event("delivered", "message \(id) delivered", ["message_id": Int(id)])
        case .messageRefused(let id, let reason, let text):
            console.event(
                "message_refused", "message \(id) refused (\(reason))" + (text.map { ": \($0)" } ?? ""),
                ["message_id": Int(id), "reason": "\(reason)"])
        case .messagesUndelivered(let lost):
            let ids = lost.sent + Array(repeating: 0, count: lost.unsent)
            console.event("undelivered", "\(ids.count) message(s) not delivered", ["count": ids.count])
        case .reconnecting:
            console.event("reconnecting", "the connection was lost; reconnecting…")
        case .resumed:
            console.event("resumed", "reconnected: the session goes on")
        case .supporterDisconnected(let reason, let text):
            console.event(
                "disconnected", "session ended: \(Self.words(reason))" + (text.map { " (\($0))" } ?? ""),
                ["reason": "\(reason)"])
            outcome.withLock { $0 = reason == .connectionLost ? 1 : 0 }
        case .error(let failure):
            console.error(Self.explain(failure))
            if console.json { console.event("error", failure.message, ["reason": "\(failure.reason)"]) }
            outcome.withLock { $0 = 1 }
        case .sessionError(let reason, let feature, let text):
            console.event(
                "session_error", "note: \(text ?? "\(reason)") — the session goes on",
                ["reason": "\(reason)", "feature": feature.map { "\($0)" } ?? ""])
        case .voipStateChanged(let state):
            console.event("voip", "VoIP: \(Self.words(state))", ["state": "\(state)"])
        }
    }

    /// Runs `say`, `send` and `revoke`; false when the line is none of them.
    private func command(_ line: String, session: DeviceSession) -> Bool {
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        guard let verb = parts.first?.lowercased(), ["say", "send", "revoke"].contains(verb) else { return false }
        guard parts.count == 2, !parts[1].isEmpty else {
            hint("\(verb) needs an argument")
            return true
        }
        let argument = parts[1]
        let console = self.console
        Task {
            do throws(DeviceSessionError) {
                switch verb {
                case "say":
                    try await session.sendChat(argument)
                case "send":
                    guard let data = FileManager.default.contents(atPath: argument) else {
                        console.error("cannot read '\(argument)'")
                        return
                    }
                    let name = URL(fileURLWithPath: argument).lastPathComponent
                    let id = try await session.sendFile(name: name, bytes: [UInt8](data))
                    console.event("sending", "sending '\(name)' (\(data.count) bytes)", ["transfer_id": Int(id)])
                default:
                    guard let feature = Feature.ID(name: argument) else {
                        console.error("unknown feature '\(argument)'")
                        return
                    }
                    try await session.revoke(feature)
                }
            } catch {
                console.error("\(verb): \(error)")
            }
        }
        return true
    }

    static func names(_ features: FeatureSet) -> String {
        features.isEmpty ? "none" : features.map { "\($0.id)" }.joined(separator: ", ")
    }

    static func words(_ reason: ReasonCode) -> String {
        switch reason {
        case .endedBySupporter: "the supporter ended it"
        case .endedByDevice: "you left"
        case .connectionLost: "the connection to the supporter node was lost"
        case .goingAway: "the supporter node shut down"
        default: "\(reason)"
        }
    }

    static func words(_ state: VoIPCallState) -> String {
        switch state {
        case .started: "started"
        case .notStartedOtherCallActive: "not started: another call is running"
        case .ended: "ended"
        case .notStartedUnsupported: "not started: not supported by one side"
        }
    }

    /// A line for the person at the terminal; with `--json`, a `hint` event so that stdout stays JSON lines.
    private func hint(_ text: String) {
        if console.json {
            console.event("hint", text, ["text": text])
        } else {
            console.line(text)
        }
    }

    /// One line: what happened and what to do.
    static func explain(_ failure: DeviceSessionFailure) -> String {
        switch failure.reason {
        case .invalidSessionCode: "the session code is not known to the supporter node — check the code"
        case .invalidAPIToken: "the API token was refused — ask the supporter team for a valid token"
        case .sessionCodeExpired: "the session code has expired — ask for a new code"
        case .sessionCodeClosed: "the session code is closed — ask for a new code"
        case .sessionCodeInUse: "another device is already on this code"
        case .rateLimited: "too many failed attempts: \(failure.message)"
        case .connectionLost: Explain.connectFailure(failure.message)
        default: failure.message
        }
    }
}
