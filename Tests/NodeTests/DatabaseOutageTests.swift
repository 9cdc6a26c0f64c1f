import Foundation
import Testing
import DeviceNode
import SupportSession
import SupporterNode
import TestSupport

extension NodeIntegration {
    /// Issue 22, item 2: presence must not outlive a database outage. Devices leave while PostgreSQL is down (their
    /// nodes cannot record the release); once it is back, every code nobody holds is joinable on every node within
    /// two presence leases, and the devices that stayed keep their codes.
    @Suite struct DatabaseOutageTests {
        static let lease: Duration = .seconds(3)

        /// Either outcome of a join: online, or refused.
        private static func settled(_ event: DeviceSessionEvent) -> Bool {
            switch event {
            case .sessionCodeOnline, .error, .supporterDisconnected: true
            default: false
            }
        }

        @Test("PostgreSQL stops while devices leave and join, starts again: every free code joinable everywhere within 2 leases")
        func everyFreeCodeIsJoinableOnEveryNodeSoonAfterTheDatabaseIsBack() async throws {
            let database = try ThrowawayPostgres()
            defer { database.stop() }
            let nodes = try [0, 1].map { _ in
                try NodeHarness(storeBackend: .postgres(database.connectionString), presenceLease: Self.lease)
            }
            defer { for node in nodes { node.shutdown() } }
            var codes: [String] = []
            for index in 0..<4 { codes.append(try await nodes[0].supporter.createCode(description: "outage \(index)").code) }
            let known = codes
            #expect(await waitUntil { known.allSatisfy { nodes[1].supporter.code($0) != nil } })
            // Code i's device is on node i mod 2.
            var devices: [JoinedDevice] = []
            for (index, code) in codes.enumerated() {
                let device = try JoinedDevice(node: try nodes[index % 2].device(), code: code)
                #expect(await device.online(), "\(device.events.all)")
                devices.append(device)
            }

            try database.halt()
            // Codes 0 and 1 leave while their releases cannot be stored...
            for device in devices.prefix(2) { device.session.leave() }
            // ... and a join in the outage is refused, not left hanging.
            let during = try JoinedDevice(node: try nodes[1].device(), code: codes[0])
            let outcome = await during.event(Self.settled)
            if case .sessionCodeOnline = outcome { Issue.record("joined while the database was down: \(during.events.all)") }
            #expect(outcome != nil, "a join in the outage got no answer: \(during.events.all)")
            during.session.leave()

            try database.startAgain()
            let back = ContinuousClock.now
            // Each code that left is joinable through the node it was not on (and so on every node).
            var rejoined: [JoinedDevice] = []
            for (index, code) in codes.prefix(2).enumerated() {
                let other = nodes[(index + 1) % 2]
                var joined: JoinedDevice?
                var refusals: [String] = []
                while joined == nil, back.duration(to: .now) < Self.lease * 6 {
                    let attempt = try JoinedDevice(node: try other.device(), code: code)
                    if case .sessionCodeOnline = await attempt.event(Self.settled) {
                        joined = attempt
                    } else {
                        refusals.append("\(attempt.events.all.last.map(String.init(describing:)) ?? "none")")
                        attempt.session.leave()
                        // A refused join is tried again shortly, as an app would: the wait is for the nodes to
                        // reconnect and renew, which the test cannot observe from outside.
                        await wallClockPause(.milliseconds(100))
                    }
                }
                let found = try #require(joined, "code \(index) never joinable on the other node: \(refusals.suffix(3))")
                rejoined.append(found)
            }
            let took = back.duration(to: .now)
            print("database outage: every free code joinable on every node \(took) after the database was back")
            #expect(took <= Self.lease * 2, "took \(took), more than 2 leases of \(Self.lease)")
            // The devices that stayed keep their codes, and both nodes say who holds what.
            for (index, code) in codes.enumerated().dropFirst(2) {
                let stayed: Bool
                if case .online = devices[index].session.state { stayed = true } else { stayed = false }
                #expect(stayed, "\(devices[index].events.all)")
                #expect(await waitUntil { nodes.allSatisfy { $0.supporter.code(code)?.state == .online } })
            }
            for device in rejoined + devices.suffix(2) { device.session.leave() }
        }
    }
}
