public import DeviceNode
public import Observation

/// The sample app's one app-wide model, written the way docs/sdk.md tells app developers to write theirs.
///
/// It owns the ``DeviceNode`` and the ``DeviceSessionModel`` and lives as long as the app (SwiftUI: a `@State` of the
/// `App`, passed to views with `.environment(model)`); views come and go without ending the user's session. Its
/// ``screen`` is what a view's `body` would draw, computed from the session model's observable state.
@Observable
@MainActor
public final class SupportAppModel {
    /// The SDK's main-actor session model: state, prompt, VoIP.
    public let support: DeviceSessionModel
    /// What the last join attempt said, when it failed (user-facing text).
    public private(set) var joinError: String?
    /// Every screen shown, in order (the headless stand-in for what the user saw).
    public private(set) var shown: [Screen] = []
    /// Whether the app's own VoIP runs (the SDK's start/stop decisions reach the app here).
    public private(set) var voipRunning = false
    /// Called with each new screen (a terminal front end prints it; SwiftUI needs no such hook).
    @ObservationIgnored public var onScreen: (@MainActor (Screen) -> Void)?

    /// What the app shows: one case per screen.
    public enum Screen: Sendable, Hashable, CustomStringConvertible {
        case enterCode
        case connecting
        case waiting(message: String?)
        case prompt(supporter: String, wants: String, choices: [String])
        case starting(supporter: String)
        case connected(supporter: String)
        case reconnecting(over: String)
        case ended(title: String, advice: String?)

        /// The screen as one line of text.
        public var description: String {
            switch self {
            case .enterCode: "Enter the code your supporter gave you"
            case .connecting: "Connecting…"
            case .waiting(let message): "Waiting for your supporter" + (message.map { " — \($0)" } ?? "")
            case .prompt(let supporter, let wants, let choices):
                "\(supporter) wants to \(wants)" + (choices.isEmpty ? "" : " (\(choices.joined(separator: ", ")))")
                    + "  [Allow] [Deny]"
            case .starting(let supporter): "Connecting you to \(supporter)…"
            case .connected(let supporter): "Connected to \(supporter)"
            case .reconnecting(let over): "Reconnecting… (\(over))"
            case .ended(let title, let advice): title + (advice.map { " \($0)" } ?? "")
            }
        }
    }

    /// An app model for `configuration`; the node checks TLS files and names here.
    public init(configuration: DeviceConfiguration) throws {
        support = DeviceSessionModel(node: try DeviceNode(configuration: configuration))
        support.onVoIP = { [weak self] running in self?.voipRunning = running }
        support.onChange = { [weak self] _ in self?.record() }
        record()
    }

    /// What the view shows now: a pure function of the session's state (what `body` would switch over).
    public var screen: Screen {
        Self.screen(for: support.state)
    }

    static func screen(for state: DeviceSessionState) -> Screen {
        switch state {
        case .offline: .enterCode
        case .connecting: .connecting
        case .online(_, let waitingMessage): .waiting(message: waitingMessage)
        case .requestPending(let request):
            .prompt(
                supporter: request.supporterName,
                wants: request.connectionType == .screenShare ? "view your screen" : "see your camera (Assist AR)",
                choices: request.featuresToConfirm.map { "\($0.id)" })
        case .starting(let request): .starting(supporter: request.supporterName)
        case .active(let supporter, _, _): .connected(supporter: supporter)
        case .reconnecting(let resuming): .reconnecting(over: screen(for: resuming).description)
        case .ended(let ending): .ended(title: ending.outcome.userMessage, advice: ending.outcome.recoverySuggestion)
        }
    }

    /// The Join button: joins and reports a failure as text for the user.
    public func join(code: String) async {
        joinError = nil
        do {
            try await support.join(code: code)
        } catch {
            joinError = error.errorDescription.map { text in
                error.recoverySuggestion.map { "\(text) \($0)" } ?? text
            }
        }
    }

    /// The prompt's Allow button.
    public func allow() { support.allow() }
    /// The prompt's Deny button.
    public func deny() { support.reject() }
    /// The Leave button.
    public func leave() { support.leave() }

    private func record() {
        let screen = self.screen
        guard shown.last != screen else { return }
        shown.append(screen)
        onScreen?(screen)
    }
}
