import CLIKit
import DeviceNode
import Dispatch
import Foundation
import Synchronization
import SupportTransport

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
        if mode == .ask {
            // The terminal: y/n answers a pending request, 'leave' leaves.
            Thread {
                while let line = readLine() {
                    let word = line.trimmingCharacters(in: .whitespaces).lowercased()
                    if word == "leave" || word == "quit" {
                        session.leave()
                        return
                    }
                    guard let request = pending.withLock({ $0 }) else {
                        if !word.isEmpty { hint("no request is waiting; type 'leave' to leave") }
                        continue
                    }
                    if word == "y" || word == "yes" {
                        session.answer(requestID: request.requestID, allow: true)
                    } else if word == "n" || word == "no" || word.isEmpty {
                        session.answer(requestID: request.requestID, allow: false)
                    } else {
                        hint("answer y or n")
                        continue
                    }
                    pending.withLock { $0 = nil }
                }
            }.start()
        }

        let events = session.events
        Task {
            for await event in events {
                handle(event, session: session, pending: pending, outcome: outcome)
            }
            finished.signal()
        }
        finished.wait()
        withExtendedLifetime(signals) {}
        return outcome.withLock { $0 } ?? 0
    }

    private func handle(
        _ event: DeviceSessionEvent, session: DeviceSession, pending: Locked<ConnectionRequestInfo?>,
        outcome: Locked<Int32?>
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
        case .supporterConnected(let name, let type):
            let words = type == .screenShare ? "screen share" : "Assist AR"
            console.event("connected", "supporter '\(name)' connected (\(words))", ["supporter": name])
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
