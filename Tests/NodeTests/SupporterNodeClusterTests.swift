import DeviceNode
import Foundation
import SupportPostgres
@testable import SupporterNode
import SupportSession
import TestSupport
import Testing
import SupportWire
import SupportVocabulary
import SampleAppModel
import SupportUtilities
import SupportRuntime
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupporterModel

extension NodeIntegration {
    /// Several supporter nodes on one real PostgreSQL server (docs/cluster.md): what one node commits the others see,
    /// a supporter on one node serves a device on another, and a code holds one device across all of them.
    @Suite(.serialized) struct SupporterNodeClusterTests {
        /// Three in-process nodes sharing a throwaway cluster.
        struct Cluster {
            let database: ThrowawayPostgres
            let nodes: [NodeHarness]

            init(
                count: Int = 3, presenceLease: Duration = .seconds(10), policy: CodeRegistry.Policy = CodeRegistry.Policy()
            ) throws {
                database = try ThrowawayPostgres()
                var nodes: [NodeHarness] = []
                for _ in 0..<count {
                    nodes.append(
                        try NodeHarness(
                            policy: policy, storeBackend: .postgres(database.connectionString),
                            presenceLease: presenceLease))
                }
                self.nodes = nodes
            }

            func stop() {
                for node in nodes { node.shutdown() }
                database.stop()
            }
        }

        @Test func aSupporterOnOneNodeServesADeviceOnAnotherAndAThirdEndsIt() async throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            let (first, second, third) = (cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
            // The code is made on node 2 and the token on node 3; the device joins node 1 with both.
            let code = try await second.supporter.createCode(type: .remoteSupport, description: "printer").code
            let token = try third.supporter.issueAPIToken(label: "made on node 3")
            #expect(await waitUntil { first.supporter.code(code) != nil && first.supporter.scope(ofToken: token) == .device })
            var rules = FeatureRules.deviceDefault
            rules.set(.allow, for: .chat)
            rules.set(.allow, for: .appMessages)
            let device = try JoinedDevice(
                node: try first.device(first.deviceConfiguration(
                    name: "Pixel on node 1", token: token,
                    capabilities: [
                        Feature(.screenShare), Feature(.voip), Feature(.chat), Feature(.fileShare), Feature(.appMessages),
                    ],
                    rules: rules)),
                code: code)
            #expect(await device.online())
            let firstID = try #require(first.supporter.clusterNodeID)
            #expect(await waitUntil { second.supporter.code(code)?.state == .online })
            #expect(second.supporter.code(code)?.node == firstID)
            #expect(second.supporter.code(code)?.deviceName == "Pixel on node 1")
            #expect(first.supporter.code(code)?.node == nil)  // its own device

            let id = try await second.supporter.requestConnection(
                code: code, supporterName: "Alice", type: .screenShare, features: [Feature(.chat), Feature(.appMessages)],
                mediaDescriptor: Array("room=7".utf8))
            let request = try #require(await device.request())
            #expect(request.requestID == id)
            #expect(request.supporterName == "Alice")
            #expect(await waitUntil { second.supporter.code(code)?.state == .requestPending })
            device.session.answer(requestID: id, allow: true)
            #expect(await first.supporterEvent(on: code) { $0 == .connected(requestID: id) } != nil)
            #expect(await waitUntil { third.supporter.code(code)?.state == .active })

            // In the session, from the other nodes (issue 24): node 3 asks for file sharing, the device's user grants
            // it, the grant is in the trail node 2 reads; node 2's chat text (chat granted with the request, whose
            // media descriptor the app got) reaches the device.
            let started = await device.event { if case .supporterConnected = $0 { true } else { false } }
            guard case .supporterConnected(_, _, let details)? = started else {
                Issue.record("not connected")
                return
            }
            #expect(details.mediaDescriptor == Array("room=7".utf8))
            try await third.supporter.askFeature(code: code, feature: .fileShare, text: "to send your logs")
            let asked = await device.event { if case .featureRequested = $0 { true } else { false } }
            guard case .featureRequested(let ask)? = asked else {
                Issue.record("the routed ask did not reach the device")
                return
            }
            #expect(ask.feature == .fileShare && ask.text == "to send your logs")
            device.session.answerFeature(askID: ask.askID, grant: true)
            #expect(
                await waitUntil {
                    (try? second.supporter.auditEvents(code: code))?.contains { $0.kind == .featureGranted } == true
                })
            let chatID = try await second.supporter.sendChat(code: code, text: "Hello from node 2")
            #expect(
                await device.event {
                    if case .messageReceived(.chat(chatID, "Hello from node 2")) = $0 { true } else { false }
                } != nil)
            // What node 2's supporter sees (the REST API reads the same): its line sent with its id and delivered,
            // the device's answer and file received — recorded by node 1, contents and bytes read on node 2.
            try await device.session.sendChat("Here it comes <b>now</b>")
            let logFile = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            try await device.session.sendFile(name: "app.log", bytes: logFile)
            #expect(
                await waitUntil {
                    let kinds = (try? second.supporter.auditEvents(code: code))?.map(\.kind) ?? []
                    return kinds.contains(.messageDelivered) && kinds.contains(.fileReceived)
                        && kinds.contains(.messageReceived)
                })
            let rows = try second.supporter.auditEvents(code: code)
            let sent = try #require(rows.first { $0.kind == .messageSent })
            #expect(sent.details["message_id"] == "\(chatID)" && sent.details["kind"] == "chat", "\(sent)")
            #expect(rows.first { $0.kind == .messageDelivered }?.details["message_id"] == "\(chatID)")
            let received = try #require(rows.first { $0.kind == .messageReceived })
            let file = try #require(rows.first { $0.kind == .fileReceived })
            #expect(file.details["name"] == "app.log" && file.details["size"] == "70000", "\(file)")
            let contents = try second.supporter.sessionContents(auditIDs: [sent.id, received.id, file.id])
            #expect(contents[sent.id]?.content.body == .chat("Hello from node 2"))
            #expect(contents[received.id]?.content.body == .chat("Here it comes <b>now</b>"))
            #expect(contents[file.id]?.size == 70_000)
            let downloaded = try #require(try second.supporter.sessionFile(auditID: file.id))
            #expect(downloaded.content.body == .file(name: "app.log", contentType: nil, bytes: logFile))
            #expect(rows.filter { $0.kind == .fileProgress }.count <= 5, "the first part and each quarter at most")
            // A file from node 3's supporter crosses to node 1 and reaches the app whole.
            let guide = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 3) }
            let transfer = try await third.supporter.sendFile(code: code, name: "guide.txt", bytes: guide)
            #expect(
                await device.event {
                    if case .messageReceived(.file(transfer, "guide.txt", _, let bytes)) = $0 { bytes == guide } else { false }
                } != nil)
            try await third.supporter.sendApplicationMessage(
                code: code, contentType: "application/json", body: Array(#"{"step":3}"#.utf8))
            #expect(
                await device.event {
                    if case .messageReceived(.application(_, "application/json", let body)) = $0 {
                        body == Array(#"{"step":3}"#.utf8)
                    } else { false }
                } != nil)

            try await third.supporter.endSession(code: code, text: "done from node 3")
            #expect(
                await device.event { $0 == .supporterDisconnected(reason: .endedBySupporter, text: "done from node 3") }
                    != nil)
            // The session is over, and with it the device's time on the code.
            #expect(await waitUntil { second.supporter.code(code)?.state == .open })
            #expect(second.supporter.code(code)?.node == nil)

            // One audit trail for all: node 2 reads what node 1 recorded, in order, with the actors.
            let events = try second.supporter.auditEvents(code: code)
            let kinds = events.map(\.kind)
            let expected: [AuditEvent.Kind] = [.codeCreated, .deviceOnline, .requestSent, .requestAllowed, .sessionStarted, .sessionEnded]
            #expect(kinds.filter(expected.contains) == expected, "\(kinds)")
            #expect(events.first { $0.kind == .requestSent }?.details["supporter"] == "Alice")
            let engine = try #require(second.supporter.store as? PostgresStoreEngine)
            #expect(try engine.verifyAudit().isVerified)

            // The metrics say so: node 2 routed its request and chat, node 3 its ask, message, file and end, to node 1,
            // each answered; node 1 sent the request to the device and saw it allowed.
            for routing in [second, third] {
                let metrics = routing.supporter.metrics.exposition()
                let routed = routing === second ? 2.0 : 4.0  // node 2: request, chat; node 3: ask, message, file, end
                #expect(
                    metricValue(metrics, #"rsup_cluster_routed_commands_total{outcome="answered"}"#) == routed,
                    "\(metrics)")
                #expect(metricValue(metrics, "rsup_cluster_routed_command_seconds_count") == routed)
            }
            let holding = first.supporter.metrics.exposition()
            #expect(metricValue(holding, "rsup_connection_requests_total") == 1)
            #expect(metricValue(holding, #"rsup_connection_request_outcomes_total{outcome="allowed"}"#) == 1)
        }

        @Test func twoNodesRacingForOneCodeLetExactlyOneDeviceOn() async throws {
            let cluster = try Cluster(count: 2)
            defer { cluster.stop() }
            let (first, second) = (cluster.nodes[0], cluster.nodes[1])
            for round in 0..<5 {
                let code = try await first.supporter.createCode(description: "race \(round)").code
                #expect(await waitUntil { second.supporter.code(code) != nil })
                let one = try JoinedDevice(node: try first.device(first.deviceConfiguration(name: "one")), code: code)
                let other = try JoinedDevice(node: try second.device(second.deviceConfiguration(name: "other")), code: code)
                func outcome(_ device: JoinedDevice) async -> String {
                    let event = await device.event {
                        switch $0 {
                        case .sessionCodeOnline, .error: true
                        default: false
                        }
                    }
                    switch event {
                    case .sessionCodeOnline: return "online"
                    case .error(let failure): return "\(failure.reason)"
                    default: return "nothing"
                    }
                }
                let outcomes = [await outcome(one), await outcome(other)].sorted()
                #expect(outcomes == ["online", "\(ReasonCode.sessionCodeInUse)"], "round \(round): \(outcomes)")
                one.session.leave()
                other.session.leave()
            }
        }

        @Test func twoNodesDrawingTheSameCodeAtOnceGetOneEachAndTheDatabaseHasBoth() async throws {
            let cluster = try Cluster(count: 2)
            defer { cluster.stop() }
            let (first, second) = (cluster.nodes[0], cluster.nodes[1])
            for round in 0..<5 {
                let proposed = "555-000-00\(round)"
                async let one = first.supporter.createCode(
                    type: .remoteSupport, details: SessionCodeDetails(description: "one"), lifetime: nil,
                    validUntil: nil, by: .local, proposing: proposed)
                async let other = second.supporter.createCode(
                    type: .remoteSupport, details: SessionCodeDetails(description: "other"), lifetime: nil,
                    validUntil: nil, by: .local, proposing: proposed)
                let codes = [try await one.code, try await other.code]
                // Exactly one node got the code it drew; the other drew again, unnoticed by its caller.
                #expect(codes.filter { $0 == proposed }.count == 1, "round \(round): \(codes)")
                #expect(Set(codes).count == 2)
                // Both nodes end up knowing both codes, each with the description of the node that made it.
                for code in codes {
                    #expect(await waitUntil { first.supporter.code(code) != nil && second.supporter.code(code) != nil })
                }
                #expect(first.supporter.code(proposed)?.description == second.supporter.code(proposed)?.description)
            }
        }

        @Test func aCodeClosedOnOneNodeEndsTheSessionOnAnotherAndCannotBeDeletedUnderADevice() async throws {
            let cluster = try Cluster(count: 2)
            defer { cluster.stop() }
            let (first, second) = (cluster.nodes[0], cluster.nodes[1])
            let code = try await first.supporter.createCode(description: "closing").code
            let device = try JoinedDevice(node: try first.device(), code: code)
            #expect(await device.online())
            #expect(await waitUntil { second.supporter.code(code)?.state == .online })
            await #expect(throws: SupporterNodeError.self) { try await second.supporter.deleteCode(code) }
            try await second.supporter.closeCode(code)
            let ended = await device.event {
                if case .error(let failure) = $0 { return failure.reason == .sessionCodeClosed }
                return false
            }
            #expect(ended != nil)
            #expect(await waitUntil { first.supporter.code(code)?.state == .closed })
            let closings = try first.supporter.auditEvents(code: code).filter { $0.kind == .codeClosed }
            #expect(closings.count == 1)  // recorded by the node that closed it, not again by the one holding it
        }

        @Test func afterPostgreSQLRestartsTheNodesListenAgainAndRouteCommands() async throws {
            let cluster = try Cluster(count: 2)
            defer { cluster.stop() }
            let (first, second) = (cluster.nodes[0], cluster.nodes[1])
            let code = try await first.supporter.createCode(description: "before the restart").code
            let device = try JoinedDevice(node: try first.device(), code: code)
            #expect(await device.online())
            #expect(await waitUntil { second.supporter.code(code)?.state == .online })
            try cluster.database.restart()
            // A code made after the restart reaches the other node (its listener reconnected), and a request from
            // node 2 reaches the device on node 1 (both engines reconnected).
            let made = try await retrying("a code made on node 2 after the restart") {
                try await second.supporter.createCode(description: "after the restart").code
            }
            #expect(await waitUntil { first.supporter.code(made) != nil })
            let id = try await retrying("a request from node 2 after the restart") {
                try await second.supporter.requestConnection(code: code, supporterName: "Dora", type: .screenShare)
            }
            let request = try #require(await device.request())
            #expect(request.requestID == id)
            #expect(request.supporterName == "Dora")
            device.session.leave()
            // Both listeners were opened again, and the metrics count it.
            for node in [first, second] {
                let reconnects = metricValue(node.supporter.metrics.exposition(), "rsup_cluster_listener_reconnects_total")
                #expect((reconnects ?? 0) >= 1, "\(String(describing: reconnects))")
            }
        }

        @Test func anAddressBlockedOnOneNodeIsBlockedOnTheOthers() async throws {
            var policy = CodeRegistry.Policy()
            policy.addressBackoff.base = .seconds(60)  // a block that outlasts the test
            let cluster = try Cluster(count: 2, policy: policy)
            defer { cluster.stop() }
            let (first, second) = (cluster.nodes[0], cluster.nodes[1])
            let code = try await first.supporter.createCode(description: "guarded").code
            func attempt(_ node: NodeHarness) async -> ReasonCode? {
                guard let device = try? JoinedDevice(
                    node: try node.device(node.deviceConfiguration(token: "rsk_not-a-token-of-this-service-000")),
                    code: code)
                else { return nil }
                let event = await device.event {
                    if case .error = $0 { return true }
                    return false
                }
                if case .error(let failure) = event { return failure.reason }
                return nil
            }
            // Node 1: five free failures, a sixth that blocks the address, then the block answers.
            var reasons: [ReasonCode?] = []
            for _ in 0..<7 { reasons.append(await attempt(first)) }
            #expect(reasons.last == .rateLimited, "\(reasons)")
            // Node 2 never saw a failure from this address, and refuses its very first attempt (a failure counted there
            // would not block it before its own free failures).
            // NOTIFYs arrive in commit order: once a code made on node 1 after the block is known on node 2, so is
            // the block.
            let after = try await first.supporter.createCode(description: "made after the block").code
            #expect(await waitUntil { second.supporter.code(after) != nil })
            #expect(await attempt(second) == .rateLimited)
        }

        @Test func accountsAndLoginSessionsMadeOnOneNodeWorkOnAnother() async throws {
            let cluster = try Cluster(count: 2)
            defer { cluster.stop() }
            let (first, second) = (cluster.nodes[0], cluster.nodes[1])
            _ = try await first.supporter.addAccount(login: "carol", displayName: "Carol", password: "a long password 3")
            let secret = try await first.supporter.signIn(login: "carol", password: "a long password 3", address: "::1").secret
            #expect(await waitUntil { second.supporter.loginSession(secret: secret)?.account.login == "carol" })
            try await first.supporter.signOut(secret: secret)
            #expect(await waitUntil { second.supporter.loginSession(secret: secret) == nil })
        }

        @Test func aRequestForACodeWhoseNodeDiedFailsOnceItsLeaseRunsOut() async throws {
            let cluster = try Cluster(count: 2, presenceLease: .seconds(2))
            defer { cluster.stop() }
            let (first, second) = (cluster.nodes[0], cluster.nodes[1])
            let code = try await first.supporter.createCode(description: "lease").code
            let device = try JoinedDevice(node: try first.device(), code: code)
            #expect(await device.online())
            #expect(await waitUntil { second.supporter.code(code)?.state == .online })
            // A node that stops renewing without a word (as if killed): its row stays until the lease runs out.
            let connection = try PostgresConnection(cluster.database.connectionString)
            defer { connection.close() }
            let nodeID = try #require(first.supporter.clusterNodeID)
            // As if node 1 had died: its row belongs to a node that renews nothing, and the lease ran out.
            try connection.query(
                "UPDATE device_presence SET node_id = 'gone', lease_until = 0 WHERE node_id = $1", [nodeID])
            #expect(await waitUntil(timeout: .seconds(5)) { second.supporter.code(code)?.state == .open })
            await #expect(throws: SupporterNodeError.self) {
                _ = try await second.supporter.requestConnection(code: code, supporterName: "Bob", type: .screenShare)
            }
            device.session.leave()
        }
    }
}
