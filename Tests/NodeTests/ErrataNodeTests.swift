import DeviceNode
import SupporterNode
import SupportWire
import TestSupport
import Testing
import SampleAppModel
import SupportSession
import SupportUtilities
import SupportRuntime
import SupportPostgres
import TestSupport
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores

extension NodeIntegration {
    /// The supporter node's share of the errata of SPEC 1.0.1 (§14), seen from a device on the wire.
    @Suite(.serialized) struct ErrataNodeTests {
        /// Errata no. 9: a device that sent SESSION_END joins again on a new connection; a REGISTER on the old one
        /// gets GOAWAY `protocol_error` (1.0 nodes answered `success`).
        @Test func registerAfterTheDevicesOwnSessionEndGetsGoAwayProtocolError() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let (port, token) = (harness.port, harness.token)
            let outcome = await blocking { () -> (results: [RegisterResult], goAway: GoAway?, closed: Bool, error: String?) in
                do throws(RawDevicePeer.Failure) {
                    let peer = try RawDevicePeer.helloed(port: port)
                    peer.send(.register(Register(sessionCode: code, apiToken: token)))
                    _ = peer.next(timeout: .seconds(10))
                    peer.send(
                        .sessionEnd(SessionEnd(reason: .endedByDevice)),
                        .register(Register(sessionCode: code, apiToken: token)))
                    peer.drainUntilClosed(timeout: .seconds(10))
                    return (peer.registerResults, peer.goAway, peer.isClosed, nil)
                } catch {
                    return ([], nil, false, error.description)
                }
            }
            #expect(outcome.error == nil, "\(outcome.error ?? "")")
            #expect(outcome.results.map(\.reason) == [.success], "only the first REGISTER is answered")
            #expect(outcome.goAway?.reason == .protocolError)
            #expect(outcome.closed)
            #expect(
                await harness.supporterEvent(on: code) { $0 == .ended(reason: .endedByDevice, text: nil) } != nil)
            // The code is free for the device's new connection.
            #expect(await waitUntil { harness.supporter.code(code)?.state == .open })
        }

        /// Errata no. 10: at shutdown a device with a joined code gets SESSION_END `going_away`, then GOAWAY
        /// `going_away`, then close_notify; a connection without a code gets only the GOAWAY.
        @Test func shutdownSendsSessionEndThenGoAwayGoingAway() async throws {
            let harness = try NodeHarness()
            let code = try await harness.supporter.createCode().code
            let (port, token) = (harness.port, harness.token)
            let peers = await blocking { () -> (joined: RawDevicePeer, idle: RawDevicePeer)? in
                guard let joined = try? RawDevicePeer.helloed(port: port, name: "joined"),
                    let idle = try? RawDevicePeer.helloed(port: port, name: "idle")
                else { return nil }
                joined.send(.register(Register(sessionCode: code, apiToken: token)))
                _ = joined.next(timeout: .seconds(10))
                return (joined, idle)
            }
            let (joined, idle) = try #require(peers)
            #expect(joined.registerResults.map(\.reason) == [.success])
            await blocking { harness.shutdown() }
            let received = await blocking { () -> (joined: [Message], idle: [Message], closed: Bool) in
                joined.drainUntilClosed(timeout: .seconds(10))
                idle.drainUntilClosed(timeout: .seconds(10))
                return (Array(joined.received.dropFirst(2)), Array(idle.received.dropFirst()), joined.isClosed && idle.isClosed)
            }
            let text = "the supporter node shuts down"
            #expect(
                received.joined == [
                    .sessionEnd(SessionEnd(reason: .goingAway, text: text)), .goAway(GoAway(reason: .goingAway, text: text)),
                ], "after HELLO_ACK and REGISTER_RESULT")
            #expect(received.idle == [.goAway(GoAway(reason: .goingAway, text: text))], "after HELLO_ACK")
            #expect(received.closed)
        }

        /// Errata no. 10, through the device SDK: the node's shutdown is "supporter disconnected (going_away)".
        @Test func deviceSeesTheNodesShutdownAsSupporterDisconnectedGoingAway() async throws {
            let harness = try NodeHarness()
            let code = try await harness.supporter.createCode().code
            let device = try JoinedDevice(node: try harness.device(), code: code)
            #expect(await device.online())
            await blocking { harness.shutdown() }
            let ended = await device.event {
                if case .supporterDisconnected = $0 { return true }
                if case .error = $0 { return true }
                return false
            }
            #expect(ended == .supporterDisconnected(reason: .goingAway, text: "the supporter node shuts down"))
        }
    }
}
