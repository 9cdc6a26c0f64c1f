import Testing

@testable import DeviceNode
import SupportSession
import SupportWire

/// The state a UI binds to, following a session's events (a pure tracker: events in, state out).
@Suite struct DeviceSessionStateTests {
    static let request = ConnectionRequestInfo(
        requestID: 7, supporterName: "Alice", connectionType: .screenShare, requestedFeatures: [])

    @Test func aSessionGoesFromConnectingThroughThePromptToActiveAndEnded() {
        var tracker = DeviceSessionStateTracker()
        #expect(tracker.state == .connecting)
        let changed = tracker.apply(.sessionCodeOnline(codeType: .remoteSupport, waitingMessage: "hold on"))
        #expect(changed)
        #expect(tracker.state == .online(codeType: .remoteSupport, waitingMessage: "hold on"))
        #expect(tracker.state.isOnline)
        tracker.apply(.connectionRequest(Self.request))
        #expect(tracker.state == .requestPending(Self.request))
        #expect(tracker.state.pendingRequest == Self.request)
        let answered = tracker.answered(7, allow: true)
        #expect(answered)
        #expect(tracker.state == .starting(Self.request))
        tracker.apply(.supporterConnected(supporterName: "Alice", connectionType: .screenShare, details: SessionDetails()))
        #expect(tracker.state == .active(supporterName: "Alice", connectionType: .screenShare, details: SessionDetails()))
        tracker.apply(.supporterDisconnected(reason: .endedBySupporter, text: "bye"))
        guard case .ended(let ending) = tracker.state else {
            Issue.record("not ended: \(tracker.state)")
            return
        }
        #expect(ending.outcome == .endedBySupporter)
        #expect(ending.reason == .endedBySupporter)
        #expect(ending.detail == "bye")
    }

    @Test func aRejectedAbortedOrTimedOutRequestGoesBackToWaitingWithItsMessage() {
        var tracker = DeviceSessionStateTracker()
        tracker.apply(.sessionCodeOnline(codeType: nil, waitingMessage: "soon"))
        tracker.apply(.connectionRequest(Self.request))
        tracker.answered(7, allow: false)
        #expect(tracker.state == .online(codeType: nil, waitingMessage: "soon"))
        tracker.apply(.connectionRequest(Self.request))
        tracker.apply(.connectionRequestAborted(requestID: 7, reason: .abortedBySupporter))
        #expect(tracker.state == .online(codeType: nil, waitingMessage: "soon"))
        tracker.apply(.connectionRequest(Self.request))
        tracker.apply(.connectionRequestTimedOut(requestID: 7))
        #expect(tracker.state == .online(codeType: nil, waitingMessage: "soon"))
    }

    @Test func anAnswerToAnotherRequestChangesNothing() {
        var tracker = DeviceSessionStateTracker()
        tracker.apply(.sessionCodeOnline(codeType: nil, waitingMessage: nil))
        tracker.apply(.connectionRequest(Self.request))
        let answered = tracker.answered(8, allow: true)
        #expect(!answered)
        #expect(tracker.state == .requestPending(Self.request))
    }

    @Test func reconnectingKeepsWhatResumesAndEventsMeanwhileApplyToIt() {
        var tracker = DeviceSessionStateTracker()
        tracker.apply(.sessionCodeOnline(codeType: nil, waitingMessage: nil))
        tracker.apply(.connectionRequest(Self.request))
        tracker.apply(.reconnecting)
        #expect(tracker.state == .reconnecting(resuming: .requestPending(Self.request)))
        #expect(tracker.state.pendingRequest == Self.request)
        #expect(tracker.state.isOnline)
        // The user allows while the link is down: it counts, and travels with the resume.
        tracker.answered(7, allow: true)
        #expect(tracker.state == .reconnecting(resuming: .starting(Self.request)))
        tracker.apply(.resumed)
        #expect(tracker.state == .starting(Self.request))
    }

    @Test func theGracePeriodRunningOutEndsWithConnectionLost() {
        var tracker = DeviceSessionStateTracker()
        tracker.apply(.sessionCodeOnline(codeType: nil, waitingMessage: nil))
        tracker.apply(.reconnecting)
        tracker.apply(.error(DeviceSessionFailure(reason: .connectionLost, message: "network error: timed out")))
        guard case .ended(let ending) = tracker.state else {
            Issue.record("not ended: \(tracker.state)")
            return
        }
        #expect(ending.outcome == .connectionLost)
        #expect(ending.outcome.isFailure)
        // Over is over: nothing moves it.
        tracker.apply(.sessionCodeOnline(codeType: nil, waitingMessage: nil))
        tracker.apply(.resumed)
        #expect(tracker.state.isEnded)
    }
}
