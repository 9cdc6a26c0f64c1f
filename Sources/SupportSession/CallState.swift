public import SupportWire
import SupportUtilities

/// What the device's call observer reports: whether a system call is running, and its identifier.
public struct SystemCallStatus: Sendable, Hashable {
    /// Whether any phone or VoIP call is running on the device.
    public var isCallRunning: Bool
    /// The running call's identifier (a UUID string on mobile platforms), when known.
    public var runningCallID: String?

    public init(isCallRunning: Bool, runningCallID: String? = nil) {
        self.isCallRunning = isCallRunning
        self.runningCallID = runningCallID
    }

    /// No call is running.
    public static let idle = SystemCallStatus(isCallRunning: false)
}

/// The VoIP decision of SPEC §8 at session start, as a pure function.
public enum VoIPDecision {
    /// Whether VoIP starts, and the state the supporter is told.
    public static func decide(
        deviceHasVoIP: Bool, supporterWantsVoIP: Bool, call: SystemCallStatus, handedOverCallID: String?
    ) -> VoIPCallState {
        guard deviceHasVoIP, supporterWantsVoIP else { return .notStartedUnsupported }
        guard call.isCallRunning else { return .started }
        if let handedOverCallID, let running = call.runningCallID, running.lowercased() == handedOverCallID.lowercased() {
            return .started
        }
        return .notStartedOtherCallActive
    }
}
