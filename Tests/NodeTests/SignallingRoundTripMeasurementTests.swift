import DeviceNode
import Dispatch
import Foundation
import Synchronization
import SupporterNode
import TestSupport
import Testing
import TestSupport
import SampleAppModel
import SupportSession
import SupportWire
import SupportUtilities
import SupportRuntime
import SupportPostgres
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores

extension NodeIntegration {
    /// Measures, and prints, the signalling round trip an app's user sees: the supporter asks, the app's main actor
    /// shows the prompt, the user allows at once, the supporter sees `connected`. Nothing is asserted about the times
    /// (they depend on the machine); the test only checks that every round trip completed.
    ///
    /// A measurement, not a test (speed is measured on demand, never in the test run): it runs only with
    /// `RSUP_MEASURE_ROUND_TRIP=1 swift test --disable-xctest --filter SignallingRoundTripMeasurementTests`.
    @Suite(
        .serialized,
        .enabled(if: ProcessInfo.processInfo.environment["RSUP_MEASURE_ROUND_TRIP"] != nil, "a measurement, run on demand"))
    struct SignallingRoundTripMeasurementTests {
        static let rounds = 30

        /// The pattern apps had to write before the main-actor model: a `Sendable` delegate on the SDK's private
        /// queue, hopping to the main actor to show the prompt, and answering from there.
        ///
        /// Hops: loop → delegate queue (1) → main actor (2) → `answer` → loop (3).
        final class MainActorHoppingDelegate: DeviceSessionDelegate {
            let prompted: @MainActor @Sendable (ConnectionRequestAuthentication) -> Void
            init(prompted: @escaping @MainActor @Sendable (ConnectionRequestAuthentication) -> Void) {
                self.prompted = prompted
            }
            func session(_ session: DeviceSession, didReceive request: ConnectionRequestAuthentication) {
                let prompted = self.prompted
                Task { @MainActor in prompted(request) }
            }
        }

        @Test func roundTripThroughASendableDelegateHoppingToTheMainActor() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let node = try harness.device()
            var toPrompt: [Duration] = []
            var total: [Duration] = []
            for _ in 0..<Self.rounds {
                let code = try await harness.supporter.createCode().code
                let shown = Mutex<ContinuousClock.Instant?>(nil)
                let delegate = MainActorHoppingDelegate { request in
                    shown.withLock { $0 = .now }
                    request.allow()
                }
                let session = try node.connect(toSessionCode: code, delegate: delegate)
                #expect(await harness.supporterEvent(on: code) { if case .deviceOnline = $0 { true } else { false } } != nil)
                let start = ContinuousClock.now
                let id = try await harness.supporter.requestConnection(code: code, supporterName: "Ana", type: .screenShare)
                #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
                let end = ContinuousClock.now
                if let shownAt = shown.withLock({ $0 }) { toPrompt.append(shownAt - start) }
                total.append(end - start)
                session.leave()
                _ = await harness.supporterEvent(on: code) { if case .ended = $0 { true } else { false } }
                withExtendedLifetime(delegate) {}
            }
            Self.report("Sendable delegate + Task { @MainActor } (3 hops)", toPrompt: toPrompt, total: total)
            #expect(total.count == Self.rounds)
        }

        /// The main-actor model: the loop hands the event to the main queue (1), the app allows from there and the
        /// answer goes straight to the loop (2).
        @MainActor @Test func roundTripThroughTheMainActorModel() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let node = try harness.device()
            let model = DeviceSessionModel(node: node)
            var toPrompt: [Duration] = []
            var total: [Duration] = []
            var shownAt: ContinuousClock.Instant?
            model.onChange = { model in
                if case .requestPending = model.state {
                    shownAt = .now
                    model.allow()
                }
            }
            for _ in 0..<Self.rounds {
                let code = try await harness.supporter.createCode().code
                shownAt = nil
                try await model.join(code: code)
                let start = ContinuousClock.now
                let id = try await harness.supporter.requestConnection(code: code, supporterName: "Ana", type: .screenShare)
                #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
                let end = ContinuousClock.now
                if let shownAt { toPrompt.append(shownAt - start) }
                total.append(end - start)
                model.leave()
                _ = await harness.supporterEvent(on: code) { if case .ended = $0 { true } else { false } }
                _ = await eventually { model.state.isEnded }
            }
            Self.report("DeviceSessionModel on the main actor (2 hops)", toPrompt: toPrompt, total: total)
            #expect(total.count == Self.rounds)
        }

        static func report(_ name: String, toPrompt: [Duration], total: [Duration]) {
            func ms(_ values: [Duration], _ quantile: Double) -> String {
                guard !values.isEmpty else { return "-" }
                let sorted = values.sorted()
                let value = sorted[min(sorted.count - 1, Int(Double(sorted.count) * quantile))]
                let seconds = Double(value.components.seconds) + Double(value.components.attoseconds) / 1e18
                return String(format: "%.2f ms", seconds * 1000)
            }
            print(
                "round trip [\(name)], \(total.count) rounds: request → app prompt p50 \(ms(toPrompt, 0.5)) "
                    + "p90 \(ms(toPrompt, 0.9)); request → supporter sees connected p50 \(ms(total, 0.5)) "
                    + "p90 \(ms(total, 0.9))")
        }
    }
}
