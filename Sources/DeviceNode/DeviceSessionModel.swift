import Dispatch
public import Observation
public import SupportSession
public import SupportWire
import SupportUtilities
public import SupportVocabulary

/// The device session as a main-actor, observable model: what a SwiftUI (or UIKit, or Jetpack-style) app binds to.
///
/// ```swift
/// @MainActor @Observable final class AppModel {            // owned by the App, not by a view
///     let support = DeviceSessionModel(node: node)
/// }
/// try await support.join(code: "123-456-789")              // returns once online; throws JoinError
/// switch support.state { case .requestPending(let request): … support.allow() … }
/// ```
///
/// - Isolated to the main actor: every property changes on the main actor, in the order of the session's events,
///   one hop from the SDK's network thread (no `nonisolated`, no hopping back).
/// - Observable: with the Observation framework (`@Observable`; SwiftUI on Apple platforms, `withObservationTracking`
///   anywhere), views redraw when ``state`` and the other properties change. The properties are plain stored
///   properties of an `@Observable` class: on Apple platforms (iOS 17+, macOS 14+) SwiftUI tracks them as it tracks
///   the app's own `@Observable` models; ``onChange`` is also called after every change, for UIKit-style code or
///   tests.
/// - Owned by something that outlives views: the model holds the session strongly, and a session whose last
///   reference goes away leaves at once (that rule protects users from a forgotten session). Keep the model in the
///   `App` (or the app delegate / an app-wide container) and hand it to views; never create it in a view's `body` or
///   a view's `@State` that is rebuilt with navigation.
/// - One session at a time; after ``DeviceSessionState/ended(_:)`` join again with the same model.
@Observable
@MainActor
public final class DeviceSessionModel {
    /// The device node the model joins codes on.
    public let node: DeviceNode
    /// Where the session stands; ``DeviceSessionState/offline`` before the first join.
    public private(set) var state: DeviceSessionState = .offline
    /// The last VoIP state the supporter was told, in the current session.
    public private(set) var voipState: VoIPCallState?
    /// Whether the app's VoIP should run now (``onVoIP`` is called when it changes).
    public private(set) var isVoIPRunning = false
    /// The supporter's asks for features that wait for the user (SPEC §15.3): answer with ``answerFeature(_:grant:)``.
    public private(set) var featureAsks: [FeatureAsk] = []
    /// What became of the last answer to a request (``allow(granting:)``, ``reject()``).
    public private(set) var lastAnswer: AnswerOutcome?
    /// The last informative session error (the session goes on), e.g. a feature the device lacks.
    public private(set) var lastSessionError: ReasonCode?
    /// The session being driven, when one is joined or just ended.
    public private(set) var session: DeviceSession?

    /// Every event of the session, after the model's properties changed (messages, access changes, …): one place for
    /// what the properties do not cover.
    @ObservationIgnored public var onEvent: (@MainActor (DeviceSessionEvent) -> Void)?
    /// Start (`true`) or stop (`false`) the app's own VoIP: the `startVoIP` / `stopVoIP` decisions of the session.
    @ObservationIgnored public var onVoIP: (@MainActor (Bool) -> Void)?
    /// Called after any property changed, for platforms or code without Observation.
    @ObservationIgnored public var onChange: (@MainActor (DeviceSessionModel) -> Void)?

    /// A model for `node`; nothing is joined until ``join(code:)``.
    public init(node: DeviceNode) {
        self.node = node
    }

    /// Joins `code` and returns once it is online; ``state`` shows the way there.
    ///
    /// Throws a ``JoinError`` (invalid code or token, expired, closed, in use, rate limited, network, already
    /// joined, cancelled); ``state`` is then ``DeviceSessionState/ended(_:)`` (or stays as it was for
    /// `alreadyJoined`). Cancelling the calling task leaves.
    public func join(code: String) async throws(JoinError) {
        if let session, !session.state.isEnded {
            throw JoinError(.alreadyJoined, detail: "this model already drives a session; leave it first")
        }
        let session: DeviceSession
        do {
            session = try node.connect(code, delegate: nil) { [weak self] delivery, state in
                self?.receive(delivery, state: state)
            }
        } catch {
            throw JoinError(error)
        }
        self.session = session
        voipState = nil
        isVoIPRunning = false
        featureAsks = []
        lastAnswer = nil
        lastSessionError = nil
        state = .connecting
        changed()
        try await session.waitUntilOnline()
    }

    /// Allows the pending request (``DeviceSessionState/pendingRequest``), granting `features` of its features to
    /// confirm (nil: all of them). The outcome lands in ``lastAnswer``.
    public func allow(granting features: FeatureSet? = nil) {
        guard let request = state.pendingRequest else {
            lastAnswer = .notPending
            changed()
            return
        }
        send(request.requestID, features.map { .allowGranting($0) } ?? .allow)
    }

    /// Rejects the pending request; the code stays online. The outcome lands in ``lastAnswer``.
    public func reject() {
        guard let request = state.pendingRequest else {
            lastAnswer = .notPending
            changed()
            return
        }
        send(request.requestID, .reject)
    }

    /// Answers a request and returns what became of the answer (also stored in ``lastAnswer``).
    @discardableResult
    public func answer(_ request: ConnectionRequestInfo, _ decision: RequestDecision) async -> AnswerOutcome {
        guard let session else { return .sessionOver }
        let outcome = await session.answer(requestID: request.requestID, decision)
        lastAnswer = outcome
        changed()
        return outcome
    }

    /// Answers a feature ask from ``featureAsks``.
    public func answerFeature(_ ask: FeatureAsk, grant: Bool) {
        featureAsks.removeAll { $0.askID == ask.askID }
        session?.answerFeature(askID: ask.askID, grant: grant)
        changed()
    }

    /// Leaves the session in any state; ``state`` becomes ``DeviceSessionState/ended(_:)`` with
    /// ``SessionOutcome/endedByUser``.
    public func leave() { session?.leave() }

    private func send(_ requestID: UInt32, _ decision: RequestDecision) {
        guard let session else {
            lastAnswer = .sessionOver
            changed()
            return
        }
        // Handed to the SDK's loop at once (no task, no hop); the outcome comes back to the main actor.
        session.answer(requestID: requestID, decision) { outcome in
            DispatchQueue.main.async {
                MainActor.assumeIsolated { [weak self] in
                    self?.lastAnswer = outcome
                    self?.changed()
                }
            }
        }
    }

    private func receive(_ delivery: DeviceSession.ModelDelivery, state newState: DeviceSessionState) {
        if state != newState { state = newState }
        switch delivery {
        case .event(let event):
            switch event {
            case .voipStateChanged(let voip): voipState = voip
            case .featureRequested(let ask): featureAsks.append(ask)
            case .featureGranted(let feature), .featureRefused(let feature, _):
                featureAsks.removeAll { $0.feature == feature }
            case .sessionError(let reason, _, _): lastSessionError = reason
            case .supporterDisconnected, .error: featureAsks = []
            default: break
            }
            changed()
            onEvent?(event)
        case .startVoIP:
            isVoIPRunning = true
            changed()
            onVoIP?(true)
        case .stopVoIP:
            isVoIPRunning = false
            changed()
            onVoIP?(false)
        case .stateChanged:
            changed()
        }
    }

    private func changed() { onChange?(self) }
}
