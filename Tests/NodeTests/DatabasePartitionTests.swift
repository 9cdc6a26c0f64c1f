import Foundation
import Glibc
import Testing
import DeviceNode
import SupportSession
import SupportWire
import SupporterModel
import SupporterNode
import TestSupport

extension NodeIntegration {
    /// Issue 22, item 5: a node cut off from its database (a partition, not a crash: every byte arrives once it
    /// heals) keeps the REGISTERs it decided waiting for their commit. A device that gives up meanwhile never got a
    /// resume secret, so when the commit finally lands the registration must not hold the code, "reconnecting", for
    /// the whole resume grace period: the code is free again on every node as soon as the release commits.
    @Suite struct DatabasePartitionTests {
        static let lease: Duration = .seconds(3)
        /// Long, so that a registration wrongly kept for it shows as a code refused elsewhere.
        static let grace: Duration = .seconds(120)

        @Test("a registration committed after its device gave up during a partition frees its code at once")
        func aRegistrationCommittedAfterItsDeviceGaveUpFreesItsCode() async throws {
            let database = try ThrowawayPostgres()
            defer { database.stop() }
            let proxy = try FreezableProxy(targetPort: UInt16(database.port))
            defer { proxy.stop() }
            // Node 0 reaches PostgreSQL only through the proxy (its writer, its listener and its reads); node 1
            // directly.
            let cutOff = try NodeHarness(
                storeBackend: .postgres("host=127.0.0.1 port=\(proxy.port) user=rsup dbname=rsup connect_timeout=5"),
                extensions: .all, resumeGrace: Self.grace, presenceLease: Self.lease, captureLog: true)
            defer { cutOff.shutdown() }
            let other = try NodeHarness(
                storeBackend: .postgres(database.connectionString), extensions: .all, resumeGrace: Self.grace,
                presenceLease: Self.lease)
            defer { other.shutdown() }
            let code = try await other.supporter.createCode(description: "partition").code
            #expect(await waitUntil { cutOff.supporter.code(code) != nil })

            proxy.hold()
            // A device registers on the cut-off node: the node decides at once, and the claim waits for the database.
            let token = cutOff.token
            let port = cutOff.port
            let peer = try await blocking {
                Result { () throws(RawDevicePeer.Failure) -> RawDevicePeer in
                    try RawDevicePeer.helloed(port: port, name: "gives-up", features: ProtocolExtensions.all.announcement)
                }
            }.get()
            #expect(peer.send(.register(Register(sessionCode: code, apiToken: token))))
            #expect(
                await waitUntil { cutOff.supporterLog.all.contains { $0.contains("online: device 'gives-up'") } },
                "the node never decided the REGISTER")
            // No answer comes (the commit waits): the device gives up, and its link breaks without a word.
            #expect(await blocking { peer.next(timeout: .milliseconds(200)) } == nil, "answered while cut off")
            Glibc.shutdown(peer.fd, Int32(SHUT_RDWR))
            peer.close()
            #expect(
                await waitUntil {
                    cutOff.supporterLog.all.contains { $0.hasPrefix("device at ") && $0.contains(" disconnected: ") }
                }, "the node never saw the device go")

            proxy.release()
            let healed = ContinuousClock.now
            // The code is joinable through the other node soon after: within two leases of the partition healing.
            var joined: JoinedDevice?
            var refusals: [String] = []
            while joined == nil, healed.duration(to: .now) < Self.lease * 4 {
                let attempt = try JoinedDevice(node: try other.device(), code: code)
                let outcome = await attempt.event {
                    switch $0 {
                    case .sessionCodeOnline, .error, .supporterDisconnected: true
                    default: false
                    }
                }
                if case .sessionCodeOnline = outcome {
                    joined = attempt
                } else {
                    refusals.append(outcome.map(String.init(describing:)) ?? "no answer")
                    attempt.session.leave()
                    // A refused join is tried again shortly, as an app would: the release commits on the other
                    // node's writer, which this test cannot watch from outside.
                    await wallClockPause(.milliseconds(100))
                }
            }
            let took = healed.duration(to: .now)
            print("database partition: the abandoned registration's code joinable elsewhere \(took) after healing")
            let device = try #require(joined, "refused for \(took): \(refusals.suffix(3))")
            defer { device.session.leave() }
            #expect(took <= Self.lease * 2, "took \(took), more than 2 leases of \(Self.lease); refusals: \(refusals.count)")
            // Both nodes tell the truth: node 1 holds it, node 0 lists no session of its own (none reconnecting).
            #expect(await waitUntil { other.supporter.code(code)?.state == .online })
            #expect(await waitUntil { cutOff.supporter.code(code)?.state == .online })
            #expect(cutOff.supporter.code(code)?.reconnecting != true)
            // The audit says what happened: the abandoned registration came online and went offline at once (the
            // link was lost), then the new device came online.
            let trail = try other.supporter.auditEvents(code: code).map(\.kind).filter {
                [.deviceOnline, .deviceOffline, .deviceReconnecting].contains($0)
            }
            #expect(trail == [.deviceOnline, .deviceOffline, .deviceOnline], "\(trail)")
        }
    }
}
