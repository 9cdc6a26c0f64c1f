import DeviceNode
import SampleAppModel
import SupporterNode
import TestSupport
import Testing
import SupportWire
import TestSupport
import SupportSession
import SupportUtilities
import SupportRuntime
import SupportPostgres
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupportVocabulary
import SupporterModel

extension NodeIntegration {
    /// The sample app (examples/SampleApp), written as docs/sdk.md tells app developers to write theirs, against a
    /// real supporter node: async join, the allow prompt, connected, a broken link shown as reconnecting, resumed.
    @Suite(.serialized) struct SampleAppTests {
        @MainActor @Test func theSampleAppJoinsAllowsAndShowsTheReconnectAndTheResume() async throws {
            let harness = try NodeHarness(extensions: .all, resumeGrace: .seconds(10))
            defer { harness.shutdown() }
            let proxy = try FreezableProxy(targetPort: harness.port)
            defer { proxy.stop() }
            let app = try SupportAppModel(
                configuration: harness.deviceConfiguration(
                    capabilities: [Feature(.screenShare), Feature(.voip)], port: proxy.port))
            #expect(app.screen == .enterCode)
            let code = try await harness.supporter.createCode(
                type: .remoteSupport, details: SessionCodeDetails(waitingMessage: "Hold on")
            ).code
            await app.join(code: code)
            #expect(app.joinError == nil)
            #expect(app.screen == .waiting(message: "Hold on"))

            let id = try await harness.supporter.requestConnection(
                code: code, supporterName: "Alice", type: .screenShare, features: [Feature(.voip)])
            #expect(await eventually { if case .prompt(supporter: "Alice", _, _) = app.screen { true } else { false } })
            app.allow()
            #expect(await eventually { app.screen == .connected(supporter: "Alice") })
            #expect(await harness.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
            #expect(await eventually { app.voipRunning })

            proxy.cut()
            // A transient screen: the resume may replace it within one poll, so look for it in what was shown.
            #expect(await eventually { app.shown.contains { if case .reconnecting = $0 { true } else { false } } })
            #expect(await eventually { app.screen == .connected(supporter: "Alice") })
            #expect(await harness.supporterEvent(on: code) { $0 == .resumed } != nil)

            app.leave()
            #expect(await eventually { if case .ended = app.screen { true } else { false } })
            let screens = app.shown.map(\.description)
            print("sample app screens:\n  " + screens.joined(separator: "\n  "))
            #expect(
                app.shown.first == .enterCode && app.shown.contains(.connecting)
                    && app.shown.contains(.reconnecting(over: "Connected to Alice"))
                    && app.shown.last == .ended(title: "You left the session.", advice: nil), "\(screens)")
        }

        @MainActor @Test func theSampleAppShowsAJoinErrorInWordsForPeople() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let app = try SupportAppModel(configuration: harness.deviceConfiguration())
            await app.join(code: "000-000-000")
            #expect(app.joinError == "This session code is not valid. Check the code with your supporter.")
            #expect(app.screen == .ended(title: "This session code is not valid.", advice: "Check the code with your supporter."))
        }
    }
}
