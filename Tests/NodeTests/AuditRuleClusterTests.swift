import DeviceNode
import Synchronization
import SupporterNode
import SupportSession
import SupportWire
import Testing
import TestSupport

import StoreTestSupport
import SupporterCore
import SupporterStore
import SupporterModel

extension NodeIntegration {
    /// The one audit rule for commands routed between nodes (docs/cluster.md), on two real nodes sharing a throwaway
    /// PostgreSQL, each behind a ``FailingClusterBus`` around its real `ClusterPeers` and a ``FailingStoreEngine``
    /// around its real engine: a connect, cancel or end asked on one node for the device on the other that fails on
    /// its way (the send, the lookup of the holding node, the command's delivery) or that the holder cannot record is
    /// a typed error at its origin, reaches no device and leaves no audit row; sent again once the fault is gone, it
    /// happens once. An answer lost after the holder carried the command out is `busy` (not a success), and what the
    /// holder did is what both nodes and the store say.
    @Suite(.serialized) struct AuditRuleClusterTests {
        /// One node of the pair, with the wrappers its store and cluster bus were built in.
        struct Node: Sendable {
            let harness: NodeHarness
            let bus: FailingClusterBus
            let store: FailingStoreEngine

            var supporter: SupporterNode { harness.supporter }
        }

        /// Two nodes on one throwaway PostgreSQL: the device joins `holder`; the supporter acts on `origin`.
        final class Pair: Sendable {
            let database: ThrowawayPostgres
            let holder: Node
            let origin: Node

            init() throws {
                database = try ThrowawayPostgres()
                holder = try Self.node(on: database)
                origin = try Self.node(on: database)
            }

            static func node(on database: ThrowawayPostgres) throws -> Node {
                let made = Mutex<(bus: FailingClusterBus?, store: FailingStoreEngine?)>((nil, nil))
                let harness = try NodeHarness(
                    storeBackend: .postgres(database.connectionString),
                    wrappingStore: { base in
                        let store = FailingStoreEngine(wrapping: base)
                        made.withLock { $0.store = store }
                        return store
                    },
                    wrappingCluster: { base in
                        let bus = FailingClusterBus(wrapping: base)
                        made.withLock { $0.bus = bus }
                        return bus
                    })
                let (bus, store) = made.withLock { $0 }
                return Node(harness: harness, bus: try #require(bus), store: try #require(store))
            }

            /// A code made on the origin with a device on the holder, online as both nodes see it.
            func deviceOnHolder() async throws -> (code: String, device: JoinedDevice) {
                let code = try await origin.supporter.createCode(description: "routed").code
                #expect(await waitUntil { self.holder.supporter.code(code) != nil })
                return (code, try await join(code))
            }

            /// A device joining `code` on the holder, once both nodes see it online.
            func join(_ code: String) async throws -> JoinedDevice {
                let device = try JoinedDevice(node: try holder.harness.device(), code: code)
                #expect(await device.online(), "\(device.events.all)")
                #expect(await waitUntil { self.states(of: code) == [.online, .online] })
                return device
            }

            /// The code's state as the holder, then the origin, sees it.
            func states(of code: String) -> [SessionCodeState?] {
                [holder.supporter.code(code)?.state, origin.supporter.code(code)?.state]
            }

            /// The audit rows on `code` of `kind`, read through each node (one trail: both must read the same).
            func audit(_ code: String, _ kind: AuditEvent.Kind) throws -> [AuditEvent] {
                let read = try [holder, origin].map { node in
                    try node.supporter.auditEvents(code: code).filter { $0.kind == kind }
                }
                #expect(read[0] == read[1])
                return read[0]
            }

            func stop() {
                holder.harness.shutdown()
                origin.harness.shutdown()
                database.stop()
            }
        }

        /// A fault on the route of a command, the node whose bus has it, and the error the origin must answer.
        struct RouteFault: Sendable, CustomTestStringConvertible {
            let faults: FailingClusterBus.Faults
            let onHolder: Bool
            let expected: SupporterNodeError.Kind

            var testDescription: String { "\(faults) failing on the \(onHolder ? "holder" : "origin")" }
        }

        static let routeFaults = [
            RouteFault(faults: .send, onHolder: false, expected: .store),
            RouteFault(faults: .holderLookup, onHolder: false, expected: .store),
            // The holder never sees the command: the origin's wait for the answer (15 s) runs out.
            RouteFault(faults: .incomingCommands, onHolder: true, expected: .busy),
        ]

        static func isRequest(_ event: DeviceSessionEvent) -> Bool {
            if case .connectionRequest = event { return true }
            return false
        }

        static func isAbort(_ event: DeviceSessionEvent) -> Bool {
            if case .connectionRequestAborted = event { return true }
            return false
        }

        static func isAbort(_ event: DeviceSessionEvent, of id: UInt32) -> Bool {
            if case .connectionRequestAborted(id, _) = event { return true }
            return false
        }

        static func isEnd(_ event: DeviceSessionEvent) -> Bool {
            if case .supporterDisconnected = event { return true }
            return false
        }

        @Test(arguments: routeFaults)
        func aRoutedCommandThatFailsOnItsWayIsATypedErrorAndHappensOnlyWhenSentAgain(_ fault: RouteFault) async throws {
            let pair = try Pair()
            defer { pair.stop() }
            let (code, device) = try await pair.deviceOnHolder()
            let origin = pair.origin.supporter
            let bus = fault.onHolder ? pair.holder.bus : pair.origin.bus

            /// Runs `body` with the fault set; the error it threw (nil when it did not throw).
            func failing(_ body: () async throws -> Void) async -> SupporterNodeError? {
                bus.faults = fault.faults
                defer { bus.faults = [] }
                do {
                    try await body()
                    return nil
                } catch let error as SupporterNodeError {
                    return error
                } catch {
                    Issue.record("not the node's error: \(error)")
                    return nil
                }
            }

            // Connect: refused, pending nowhere; sent again, it is the device's first request and the only one stored.
            let connect = await failing {
                _ = try await origin.requestConnection(code: code, supporterName: "Alice", type: .screenShare)
            }
            #expect(connect?.kind == fault.expected, "\(String(describing: connect))")
            #expect(pair.states(of: code) == [.online, .online])
            let id = try await origin.requestConnection(code: code, supporterName: "Alice", type: .screenShare)
            #expect(try #require(await device.request()).requestID == id)
            #expect(await waitUntil { pair.states(of: code) == [.requestPending, .requestPending] })
            #expect(try pair.audit(code, .requestSent).map { $0.details["request_id"] } == ["\(id)"])

            // Cancel: refused, the request still pending everywhere; sent again, withdrawn once.
            let cancel = await failing { try await origin.abortRequest(code: code) }
            #expect(cancel?.kind == fault.expected, "\(String(describing: cancel))")
            #expect(pair.states(of: code) == [.requestPending, .requestPending])
            try await origin.abortRequest(code: code)
            #expect(await device.event { Self.isAbort($0, of: id) } != nil)
            #expect(await waitUntil { pair.states(of: code) == [.online, .online] })
            #expect(try pair.audit(code, .requestAborted).map { $0.details["request_id"] } == ["\(id)"])

            // End: refused, the session still active everywhere; sent again, ended once.
            let second = try await origin.requestConnection(code: code, supporterName: "Alice", type: .screenShare)
            #expect(await device.event {
                if case .connectionRequest(let info) = $0 { return info.requestID == second }
                return false
            } != nil)
            device.session.answer(requestID: second, allow: true)
            #expect(await waitUntil { pair.states(of: code) == [.active, .active] })
            let end = await failing { try await origin.endSession(code: code, text: "done") }
            #expect(end?.kind == fault.expected, "\(String(describing: end))")
            #expect(pair.states(of: code) == [.active, .active])
            try await origin.endSession(code: code, text: "done")
            #expect(await device.event { $0 == .supporterDisconnected(reason: .endedBySupporter, text: "done") } != nil)
            #expect(await waitUntil { pair.states(of: code) == [.open, .open] })
            #expect(try pair.audit(code, .sessionEnded).count == 1)

            // Each refusal was the fault's, and the device saw each command once: the one sent again.
            let counts = bus.counts
            #expect(counts.sendsFailed + counts.lookupsFailed + counts.commandsDropped == 3, "\(counts)")
            let events = device.events.all
            #expect(events.filter(Self.isRequest).count == 2)
            #expect(events.filter(Self.isAbort).count == 1)
            #expect(events.filter(Self.isEnd).count == 1)
            #expect(try pair.audit(code, .requestSent).count == 2)
        }

        @Test func aRoutedRequestWhoseAnswerIsLostIsBusyAndWhatTheHolderDidIsWhatBothNodesAndTheStoreSay()
            async throws
        {
            let pair = try Pair()
            defer { pair.stop() }
            let (code, device) = try await pair.deviceOnHolder()
            let origin = pair.origin.supporter

            pair.holder.bus.faults = .outgoingAnswers
            var lost: SupporterNodeError?
            do {
                _ = try await origin.requestConnection(code: code, supporterName: "Alice", type: .screenShare)
            } catch {
                lost = error
            }
            pair.holder.bus.faults = []
            // Not a success: the holder took the command, so it was not withdrawn; the origin cannot know what
            // happened, and says so (not `busy`, which says nothing was done).
            #expect(lost?.kind == .store, "\(String(describing: lost))")
            #expect(lost?.description.contains("unknown") == true, "\(String(describing: lost))")
            #expect(pair.holder.bus.counts.answersDropped == 1)

            // The holder carried it out: the device has the request, both nodes show it pending, the store has its row.
            let request = try #require(await device.request())
            #expect(await waitUntil { pair.states(of: code) == [.requestPending, .requestPending] })
            #expect(try pair.audit(code, .requestSent).map { $0.details["request_id"] } == ["\(request.requestID)"])
            // Asked again, the answer is the state all agree on (a request is pending), and nothing more is stored.
            var again: SupporterNodeError?
            do {
                _ = try await origin.requestConnection(code: code, supporterName: "Alice", type: .screenShare)
            } catch {
                again = error
            }
            #expect(again?.kind == .conflict, "\(String(describing: again))")
            #expect(try pair.audit(code, .requestSent).count == 1)
            // And the origin can cancel it like any request it saw answered.
            try await origin.abortRequest(code: code)
            #expect(await device.event { Self.isAbort($0, of: request.requestID) } != nil)
            #expect(await waitUntil { pair.states(of: code) == [.online, .online] })
        }

        /// A command routed to the holder.
        enum Routed: String, Sendable, CaseIterable { case connect, cancel, end }

        /// Brings a code with a device on the holder to the state `command` acts on, has the origin send it while
        /// every write on the holder fails, and checks what must hold then: the origin hears the holder's failure as
        /// the store's error; the device's connection ends with it (the rule for a command that cannot be recorded),
        /// nothing of the command reaching the device before; no audit row claims the command happened. The holder's
        /// store works again on return: once the device saw its connection end, or (`throughTheEnd`) once the holder
        /// has also failed to record the end of the device's connection (the store is down a little longer).
        static func failingAtTheHolder(_ command: Routed, _ pair: Pair, throughTheEnd: Bool = false) async throws
            -> String
        {
            let (code, device) = try await pair.deviceOnHolder()
            let origin = pair.origin.supporter
            if command != .connect {
                let id = try await origin.requestConnection(code: code, supporterName: "Alice", type: .screenShare)
                #expect(try #require(await device.request()).requestID == id)
                if command == .end {
                    device.session.answer(requestID: id, allow: true)
                    #expect(await waitUntil { pair.states(of: code) == [.active, .active] })
                } else {
                    #expect(await waitUntil { pair.states(of: code) == [.requestPending, .requestPending] })
                }
            }

            pair.holder.store.failing = true
            var failure: SupporterNodeError?
            do {
                switch command {
                case .connect:
                    _ = try await origin.requestConnection(code: code, supporterName: "Bob", type: .screenShare)
                case .cancel: try await origin.abortRequest(code: code)
                case .end: try await origin.endSession(code: code, text: "done")
                }
            } catch {
                failure = error
            }
            #expect(failure?.kind == .store, "\(String(describing: failure))")
            let last = await device.event {
                if case .error = $0 { return true }
                return Self.isEnd($0)
            }
            if throughTheEnd {
                // The end's rows are the failed command's own for an end; for the others a write of their own.
                let writes = command == .end ? 1 : 2
                #expect(await waitUntil {
                    pair.holder.supporter.code(code)?.state == .open && pair.holder.store.failedWrites >= writes
                })
            }
            pair.holder.store.failing = false
            #expect(last != nil, "the device's connection did not end")
            #expect(pair.holder.store.failedWrites > 0)
            let events = device.events.all
            switch command {
            case .connect: #expect(!events.contains(where: Self.isRequest), "\(events)")
            case .cancel: #expect(!events.contains(where: Self.isAbort), "\(events)")
            case .end:
                let ended = DeviceSessionEvent.supporterDisconnected(reason: .endedBySupporter, text: "done")
                #expect(!events.contains(ended), "\(events)")
            }
            if command == .connect { #expect(!pair.states(of: code).contains(.requestPending)) }
            switch command {
            case .connect: #expect(try pair.audit(code, .requestSent).isEmpty)
            case .cancel: #expect(try pair.audit(code, .requestAborted).isEmpty)
            case .end:
                let ends = try pair.audit(code, .sessionEnded) + pair.audit(code, .deviceOffline)
                #expect(!ends.contains { $0.details["reason"] == "\(ReasonCode.endedBySupporter)" }, "\(ends)")
            }
            return code
        }

        @Test(arguments: Routed.allCases)
        func aRoutedCommandTheHolderCannotRecordIsAStoreErrorAtTheOriginAndNeverReachesTheDevice(_ command: Routed)
            async throws
        {
            let pair = try Pair()
            defer { pair.stop() }
            let code = try await Self.failingAtTheHolder(command, pair)
            // Once the holder has let the failed connection go, a device joins the code there again and the command
            // sent again from the origin reaches it.
            #expect(await waitUntil { pair.holder.supporter.code(code)?.state == .open })
            let again = try await pair.join(code)
            let id = try await pair.origin.supporter.requestConnection(
                code: code, supporterName: "Carol", type: .screenShare)
            #expect(try #require(await again.request()).requestID == id)
            #expect(await waitUntil { pair.states(of: code) == [.requestPending, .requestPending] })
        }

        /// Issue 22, item 2: renewal renews only the codes a node holds and frees its other rows, so the presence
        /// row whose release failed with the store is freed by the next renewal once the store is back.
        @Test(arguments: Routed.allCases)
        func aCodeWhoseDeviceWentOfflineWhileTheStoreFailedIsFreeOnEveryNodeOnceTheStoreIsBack(_ command: Routed)
            async throws
        {
            let pair = try Pair()
            defer { pair.stop() }
            let code = try await Self.failingAtTheHolder(command, pair, throughTheEnd: true)
            // Memory (the holder: no device), the store (its presence row) and the origin must come to agree.
            #expect(await waitUntil { pair.states(of: code) == [.open, .open] }, "\(pair.states(of: code))")
            // A device may then join the code on the other node.
            let elsewhere = try JoinedDevice(node: try pair.origin.harness.device(), code: code)
            #expect(await elsewhere.online(), "\(elsewhere.events.all)")
        }

        /// What a request sets besides the session (the code's assignee) must not change in memory when the request
        /// cannot be stored: memory, store and the other node must keep agreeing on who the code is assigned to.
        @Test
        func aRoutedRequestTheHolderCannotRecordLeavesTheCodesAssigneeAsStored() async throws {
            let pair = try Pair()
            defer { pair.stop() }
            let (code, device) = try await pair.deviceOnHolder()
            let origin = pair.origin.supporter

            pair.holder.store.failing = true
            await #expect(throws: SupporterNodeError.self) {
                _ = try await origin.requestConnection(code: code, supporterName: "Bob", type: .screenShare)
            }
            _ = await device.event {
                if case .error = $0 { return true }
                return false
            }
            pair.holder.store.failing = false

            let stored = try pair.holder.store.loadSnapshot(expiringLoginSessionsBefore: .distantPast).codes
                .first { $0.code == code }
            #expect(stored?.assignedSupporter == nil)
            #expect(pair.origin.supporter.code(code)?.assignedSupporter == nil)
            #expect(pair.holder.supporter.code(code)?.assignedSupporter == nil)
        }
    }
}
