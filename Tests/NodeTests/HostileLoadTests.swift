import DeviceNode
import Foundation
import Glibc
import Synchronization
import SupporterNode
import SupportWire
import TestSupport
import Testing
import SampleAppModel
import SupportSession
import SupportUtilities
import SupportRuntime
import SupportPostgres
@testable import SupporterStore
@testable import SupporterStoreSQLite
@testable import SupporterStorePostgres
@testable import SupporterCore
import SupporterStores
import SupporterModel

extension NodeIntegration {
    /// Findings of the abuse review, each reproduced against a real node on loopback TLS with raw peers that send
    /// what they like (``RawDevicePeer``), and each asserting what a user would see: the attacker's GOAWAY, the
    /// legitimate device's time to come online, the rows in the audit trail.
    ///
    /// Attackers connect from 127.0.0.2 and legitimate devices from 127.0.0.1 (both reach the node on 127.0.0.1),
    /// so per-address limits on the attacker are told apart from their effect on others — except where a test puts
    /// both behind one address on purpose.
    @Suite(.serialized) struct HostileLoadTests {
        static let attacker = "127.0.0.2"
        static let bogusToken = "rsk_bogus_token_of_an_attacker"

        /// Joins `code` with a device from 127.0.0.1; how long it took to come online (nil if it did not), and the
        /// device, which stays connected while the caller holds it.
        private func join(_ harness: NodeHarness, code: String, timeout: Duration = .seconds(10)) async throws
            -> (timeToOnline: Duration?, device: JoinedDevice)
        {
            let clock = ContinuousClock()
            let started = clock.now
            let device = try JoinedDevice(node: try harness.device(harness.deviceConfiguration(name: "legitimate")), code: code)
            let online = await device.events.waitFor(timeout: timeout) {
                if case .sessionCodeOnline = $0 { return true }
                return false
            }
            return (online == nil ? nil : clock.now - started, device)
        }

        /// The audit rows stored after `id` whose source address is `address`.
        private func auditRows(after id: Int64, from address: String, _ harness: NodeHarness) throws -> [AuditEvent] {
            try harness.supporter.auditEvents(limit: 100_000, afterID: id).filter {
                $0.details["source_address"] == address
            }
        }

        private func milliseconds(_ duration: Duration) -> String {
            "\(Int((duration / .milliseconds(1)).rounded())) ms"
        }

        private func lastAuditID(_ harness: NodeHarness) throws -> Int64 {
            try harness.supporter.auditEvents(limit: 100_000).last?.id ?? 0
        }

        // MARK: REGISTER spam

        @Test func registerSpamOnOneConnectionIsClosedWithRateLimitedAfterFiveRefusals() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let port = harness.port
            let limit = CodeRegistry.Policy().refusalsPerConnection
            let outcome = await blocking { () -> (results: [RegisterResult], goAway: GoAway?, closed: Bool, error: String?) in
                do throws(RawDevicePeer.Failure) {
                    let peer = try RawDevicePeer.helloed(port: port, from: Self.attacker, name: "spammer")
                    defer { peer.close() }
                    // As fast as it can: 50 REGISTERs in one write, without waiting for a single answer.
                    peer.send(Array(repeating: .register(Register(sessionCode: code, apiToken: Self.bogusToken)), count: 50))
                    let closed = peer.drainUntilClosed(timeout: .seconds(10))
                    return (peer.registerResults, peer.goAway, closed, nil)
                } catch {
                    return ([], nil, false, error.description)
                }
            }
            #expect(outcome.error == nil)
            #expect(outcome.closed, "the node kept a REGISTER-spamming connection open")
            #expect(outcome.goAway?.reason == .rateLimited, "GOAWAY: \(String(describing: outcome.goAway))")
            #expect(outcome.results.count == limit, "REGISTER_RESULTs before the GOAWAY: \(outcome.results.map(\.reason))")
            #expect(outcome.results.allSatisfy { $0.reason == .invalidAPIToken }, "\(outcome.results.map(\.reason))")
        }

        /// What one spamming peer saw over its reconnect loop.
        struct SpamReport: Sendable {
            var connections = 0
            var registersSent = 0
            var refusalsSeen = 0
            /// Connections the node closed at accept, before any TLS work (the address is blocked: SPEC §13.1).
            var closedAtAccept = 0
            /// Connections that ended some other way than GOAWAY `rate_limited` after at most five refusals.
            var otherEndings: [String] = []
        }

        /// Connections closed at accept so far, over all spamming peers: the event that says the spam is in full swing
        /// (the node has blocked the address).
        final class SpamProgress: Sendable {
            let closedAtAccept = Atomic<Int>(0)
        }

        /// Reconnects from the attacker's address for `duration`, each time sending 50 REGISTERs with a bad token and
        /// reading until the node closes the connection.
        private static func spam(port: UInt16, code: String, for duration: Duration, progress: SpamProgress) -> SpamReport {
            var report = SpamReport()
            let clock = ContinuousClock()
            let end = clock.now + duration
            let limit = CodeRegistry.Policy().refusalsPerConnection
            while clock.now < end {
                do throws(RawDevicePeer.Failure) {
                    let peer = try RawDevicePeer.helloed(port: port, from: attacker, name: "spammer")
                    report.connections += 1
                    peer.send(Array(repeating: .register(Register(sessionCode: code, apiToken: bogusToken)), count: 50))
                    report.registersSent += 50
                    let closed = peer.drainUntilClosed(timeout: .seconds(5))
                    let results = peer.registerResults
                    report.refusalsSeen += results.count
                    if !closed || peer.goAway?.reason != .rateLimited || results.count > limit
                        || results.contains(where: { $0.reason == .success })
                    {
                        report.otherEndings.append(
                            "closed: \(closed), GOAWAY: \(String(describing: peer.goAway?.reason)), results: \(results.map(\.reason))")
                    }
                    peer.close()
                } catch {
                    if error.description.contains("TLS handshake ended by the node") {
                        report.closedAtAccept += 1
                        progress.closedAtAccept.add(1, ordering: .relaxed)
                    } else {
                        report.otherEndings.append(error.description)
                    }
                }
            }
            return report
        }

        @Test func reconnectingRegisterSpamNeitherDelaysALegitimateDeviceNorFloodsTheAuditTrail() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let targeted = try await harness.supporter.createCode().code
            let legitimate = try await harness.supporter.createCode().code
            let before = try lastAuditID(harness)
            let port = harness.port
            let spammers = 3
            let duration: Duration = .seconds(3)
            let progress = SpamProgress()
            let clock = ContinuousClock()
            let spamEnds = clock.now + duration
            let reports = Task {
                await withTaskGroup(of: SpamReport.self) { group in
                    for _ in 0..<spammers {
                        group.addTask {
                            await blocking { Self.spam(port: port, code: targeted, for: duration, progress: progress) }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
            }
            // The spam is in full swing once the node has blocked the address (a connection closed at accept); the
            // device joins then, in the middle of the spam.
            try await eventually("the spam's address to be blocked at accept") {
                progress.closedAtAccept.load(ordering: .relaxed) > 0 ? true : nil
            }
            let (joined, device) = try await join(harness, code: legitimate)
            let joinEnded = clock.now
            defer { withExtendedLifetime(device) {} }
            let all = await reports.value
            let connections = all.map(\.connections).reduce(0, +)
            let sent = all.map(\.registersSent).reduce(0, +)
            let refusals = all.map(\.refusalsSeen).reduce(0, +)
            let closedAtAccept = all.map(\.closedAtAccept).reduce(0, +)
            // A code made now is acknowledged once committed, behind every commit queued before it: the last rows
            // have landed.
            _ = try await harness.supporter.createCode()
            let rows = try auditRows(after: before, from: Self.attacker, harness)
            print(
                "register spam: \(spammers) peers, \(connections) connections, \(closedAtAccept) closed at accept, "
                    + "\(sent) REGISTERs sent, \(refusals) refusals answered; legitimate device online after "
                    + "\(joined.map(milliseconds) ?? "never");"
                    + " audit rows for the spam source: \(rows.count)")

            let online = try #require(joined, "the legitimate device did not come online during the spam")
            #expect(online < .seconds(2))
            #expect(joinEnded < spamEnds, "the device came online after the spam ended, not in its middle")
            #expect(harness.supporter.code(legitimate)?.state == .online)
            #expect(connections >= 1, "the spam never got going")
            // Once the address is blocked, its new connections get 5 a second (a burst of 5): the rest are closed at
            // accept and cost no TLS handshake.
            #expect(closedAtAccept > 0, "the blocked address was never throttled at accept")
            #expect(connections <= 40, "\(connections) spam connections got through TLS in \(duration)")
            for report in all { #expect(report.otherEndings.isEmpty, "\(report.otherEndings.prefix(3))") }
            #expect(!rows.isEmpty, "refused registrations left no trace in the audit trail")
            #expect(rows.count <= 25, "\(rows.count) audit rows for \(refusals) refusals in \(duration)")
            #expect(harness.supporter.code(targeted)?.state == .open)
        }

        // MARK: idle connections after HELLO

        @Test func idleConnectionsAfterHelloAreCappedPerAddressAndClosedAtTheRegistrationDeadline() async throws {
            // 6 s: opening the 200 attempts must end before the first idle one's deadline; that took 2.3 s with a CPU
            // hog on both cores.
            let deadline: Duration = .seconds(6)
            let harness = try NodeHarness(registrationDeadline: deadline)
            defer { harness.shutdown() }
            let cap = CodeRegistry.Policy().unauthenticatedPerAddress
            let code = try await harness.supporter.createCode().code
            let port = harness.port
            let attempts = 200

            struct Opened: Sendable {
                var admitted: [(peer: RawDevicePeer, openedAt: ContinuousClock.Instant)] = []
                /// How long each refused attempt took from connect to being closed.
                var refusedAfter: [Duration] = []
                var elapsed: Duration = .zero
            }
            let opened = await blocking { () -> Opened in
                var opened = Opened()
                let clock = ContinuousClock()
                let start = clock.now
                for index in 0..<attempts {
                    let attempt = clock.now
                    do {
                        let peer = try RawDevicePeer.helloed(port: port, from: Self.attacker, name: "idle-\(index)")
                        opened.admitted.append((peer, clock.now))
                    } catch {
                        opened.refusedAfter.append(clock.now - attempt)
                    }
                }
                opened.elapsed = clock.now - start
                return opened
            }
            defer { for (peer, _) in opened.admitted { peer.close() } }
            let slowestRefusal = opened.refusedAfter.max() ?? .zero
            print(
                "idle after HELLO: \(attempts) attempts in \(opened.elapsed): \(opened.admitted.count) admitted,"
                    + " \(opened.refusedAfter.count) refused (slowest refusal \(slowestRefusal))")
            #expect(opened.elapsed < deadline, "opening took longer than the deadline; the counts below mean less")
            #expect(opened.admitted.count == cap)
            #expect(opened.refusedAfter.count == attempts - cap)
            #expect(slowestRefusal < .milliseconds(500), "a refused connection was not closed at once")

            // A legitimate device (another address) registers while the idle connections hold their slots.
            let (joined, device) = try await join(harness, code: code)
            defer { withExtendedLifetime(device) {} }
            let stillOpen = await blocking { () -> Int in
                opened.admitted.filter { $0.peer.poll(); return !$0.peer.isClosed }.count
            }
            print("legitimate device online after \(joined.map(milliseconds) ?? "never"); \(stillOpen) idle still open")
            #expect(joined != nil && joined! < .seconds(2))
            #expect(stillOpen == opened.admitted.count, "the idle connections closed before the device joined")

            // Each idle one is closed at its registration deadline, with GOAWAY protocol_error.
            let lifetimes = await blocking { () -> [(lifetime: Duration?, reason: ReasonCode?)] in
                _ = waitUntilBlocking(timeout: deadline + waitDeadline) {
                    for (peer, _) in opened.admitted where !peer.isClosed { peer.poll() }
                    return !opened.admitted.contains(where: { !$0.peer.isClosed })
                }
                return opened.admitted.map { entry in
                    (entry.peer.closedAt.map { $0 - entry.openedAt }, entry.peer.goAway?.reason)
                }
            }
            let closed = lifetimes.compactMap(\.lifetime)
            print("idle lifetimes: min \(closed.min() ?? .zero), max \(closed.max() ?? .zero) (deadline \(deadline))")
            #expect(closed.count == lifetimes.count, "\(lifetimes.count - closed.count) idle connections outlived the deadline")
            #expect(lifetimes.allSatisfy { $0.reason == .protocolError }, "\(Set(lifetimes.map { "\(String(describing: $0.reason))" }))")
            #expect((closed.min() ?? .zero) >= deadline - .milliseconds(100))
            // Slack for the client: it notices a close by polling 64 sockets, which lags on a loaded 2-core machine.
            #expect((closed.max() ?? .seconds(999)) < deadline + .seconds(2))
            // Their slots are free again once the node stops waiting for their close_notify (at most 2 s): the address
            // may connect once more.
            let again = await blocking { () -> Duration? in
                let clock = ContinuousClock()
                let start = clock.now
                let admitted = waitUntilBlocking {
                    guard let peer = try? RawDevicePeer.helloed(port: port, from: Self.attacker) else { return false }
                    peer.close()
                    return true
                }
                return admitted ? clock.now - start : nil
            }
            print("the attacker's address admitted again \(again.map(milliseconds) ?? "never") after the last close")
            // At most 2 s of close_notify wait; 10 s is generous on a loaded machine and far below a held slot.
            #expect(again != nil && again! < .seconds(10))
        }

        // MARK: lock-out

        /// 7 bad-token REGISTERs naming a device's code (the code's and the address's back-off engage) do not keep
        /// the device with the right token off its code — whether the attacker shares its address or not.
        @Test(arguments: ["127.0.0.1", "127.0.0.2"])
        func badTokenAttemptsOnACodeDoNotLockTheRightDeviceOut(attackerAddress: String) async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let port = harness.port
            let reasons = await blocking { () -> [String] in
                (0..<7).map { _ in
                    guard let peer = try? RawDevicePeer.helloed(port: port, from: attackerAddress) else { return "refused" }
                    defer { peer.close() }
                    peer.send(.register(Register(sessionCode: code, apiToken: Self.bogusToken)))
                    while case .message(let message) = peer.next(timeout: .seconds(5)) {
                        if case .registerResult(let result) = message { return "\(result.reason)" }
                    }
                    return "no answer"
                }
            }
            // The free failures and the one that starts the block are refused for the token; then the back-off holds.
            let refusedForTheToken = CodeRegistry.Policy().codeBackoff.freeFailures + 1
            #expect(reasons.prefix(refusedForTheToken).allSatisfy { $0 == "\(ReasonCode.invalidAPIToken)" }, "\(reasons)")
            #expect(
                reasons.dropFirst(refusedForTheToken).allSatisfy { $0 == "\(ReasonCode.rateLimited)" }
                    && reasons.count > refusedForTheToken,
                "back-off never engaged: \(reasons)")
            let (joined, device) = try await join(harness, code: code)
            defer { withExtendedLifetime(device) {} }
            print("after \(reasons) from \(attackerAddress): the right device online after \(joined.map(milliseconds) ?? "never")")
            #expect(joined != nil && joined! < .seconds(2))
            #expect(harness.supporter.code(code)?.state == .online)
            #expect(try harness.supporter.auditEvents(code: code).contains { $0.kind == .deviceOnline })
        }

        // MARK: database locked by another process

        /// What a raw device saw after sending REGISTER.
        struct RegistrationOutcome: Sendable {
            var sentAt: ContinuousClock.Instant
            var result: RegisterResult?
            var resultAt: ContinuousClock.Instant?
            var goAway: GoAway?
            var closedAt: ContinuousClock.Instant?

            /// `instant` as milliseconds after the REGISTER was sent, for the printed figures.
            func after(_ instant: ContinuousClock.Instant?) -> String {
                instant.map { "\(Int((($0 - sentAt) / .milliseconds(1)).rounded())) ms" } ?? "-"
            }

            var summary: String {
                "result \(result.map { "\($0.reason)" } ?? "none") at \(after(resultAt)), GOAWAY "
                    + "\(goAway.map { "\($0.reason)" } ?? "none"), closed at \(after(closedAt))"
            }
        }

        /// Sends REGISTER on `peer` after `delay` and waits up to 12 s for its REGISTER_RESULT or the close.
        private static func register(
            _ peer: RawDevicePeer, code: String, token: String, after delay: Duration
        ) async -> RegistrationOutcome {
            await blocking {
                // wall clock: the three REGISTERs are ordered 300 ms apart against a real SQLite lock and its 5 s busy_timeout
                Thread.sleep(forTimeInterval: delay / .seconds(1))
                var outcome = RegistrationOutcome(sentAt: ContinuousClock.now)
                peer.send(.register(Register(sessionCode: code, apiToken: token)))
                while let event = peer.next(timeout: .seconds(12)) {
                    if case .message(.registerResult(let result)) = event {
                        outcome.result = result
                        outcome.resultAt = ContinuousClock.now
                        break
                    }
                    if case .closed = event { break }
                }
                outcome.goAway = peer.goAway
                outcome.closedAt = peer.closedAt
                return outcome
            }
        }

        /// Opens a raw device and exchanges HELLO (and REGISTER on `code`, when given, expecting success).
        private static func rawDevice(port: UInt16, name: String, registeringOn code: String? = nil, token: String)
            async throws -> RawDevicePeer
        {
            try await blocking { () -> Result<RawDevicePeer, RawDevicePeer.Failure> in
                Result { () throws(RawDevicePeer.Failure) -> RawDevicePeer in
                    let peer = try RawDevicePeer.helloed(port: port, name: name)
                    guard let code else { return peer }
                    peer.send(.register(Register(sessionCode: code, apiToken: token)))
                    guard case .message(.registerResult(let result)) = peer.next(timeout: .seconds(5)),
                        result.reason == .success
                    else { throw RawDevicePeer.Failure(description: "could not register: \(peer.received)") }
                    return peer
                }
            }.get()
        }

        /// A node store file in a fresh folder, and another process (python3's sqlite3) that can hold it with
        /// `BEGIN EXCLUSIVE` until told to commit.
        final class ExternallyLockedStore: Sendable {
            let directory = NSTemporaryDirectory() + "rsup-locked-store-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            var path: String { directory + "/node.sqlite" }
            private let locker = Mutex<ChildProcess?>(nil)

            init() throws { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }

            /// Starts python3, which takes the lock; returns once it holds it.
            func lock() async throws {
                let script = """
                    import sqlite3, sys
                    connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
                    connection.execute('BEGIN EXCLUSIVE')
                    print('locked', flush=True)
                    sys.stdin.read()
                    connection.execute('COMMIT')
                    print('released', flush=True)
                    """
                let process = try ChildProcess(
                    "python3", ["-c", script, path], stdin: .pipe, stdout: .pipe, stderr: .file(directory + "/python.log"))
                locker.withLock { $0 = process }
                let stdout = process.stdoutFD
                let line = await blocking { HostileLoadTests.readLine(stdout, timeout: .seconds(10)) }
                try #require(line == "locked", "python3 did not lock the database: \(pythonLog)")
            }

            /// Lets python3 commit; whether it did.
            func release() async -> Bool {
                guard let process = locker.withLock({ $0 }) else { return false }
                process.closeStdin()
                let stdout = process.stdoutFD
                return await blocking { HostileLoadTests.readLine(stdout, timeout: .seconds(10)) } == "released"
            }

            var pythonLog: String { (try? String(contentsOfFile: directory + "/python.log", encoding: .utf8)) ?? "" }

            func remove() {
                locker.withLock { $0?.signal(SIGKILL) }
                try? FileManager.default.removeItem(atPath: directory)
            }
        }

        /// Another process holds the node's SQLite file with `BEGIN EXCLUSIVE` until the node has given up on it. The
        /// store writer waits `busy_timeout` (5 s) for the write lock, then gives up: a device that registers
        /// meanwhile must never be told success before its `device_online` row is written — it gets GOAWAY
        /// `internal_error` when the writer gives up, and supporters hear nothing of it — while the event loops, which
        /// never wait for SQLite, keep answering PINGs at once.
        @Test func aDatabaseLockedByAnotherProcessDelaysNoAcknowledgementAndStallsNoLoop() async throws {
            let store = try ExternallyLockedStore()
            defer { store.remove() }
            let harness = try NodeHarness(storePath: store.path, captureLog: true)
            defer { harness.shutdown() }
            let lockedCode = try await harness.supporter.createCode().code
            let onlineCode = try await harness.supporter.createCode().code
            let port = harness.port
            let token = harness.token
            // Before the lock: one device online (it will PING), one connected and through HELLO (it will register).
            let pinger = try await Self.rawDevice(port: port, name: "pinger", registeringOn: onlineCode, token: token)
            defer { pinger.close() }
            let registrant = try await Self.rawDevice(port: port, name: "registrant", token: token)
            defer { registrant.close() }

            try await store.lock()
            let clock = ContinuousClock()
            // The PINGs go on until the node has given up on the registration (the lock is held all that time).
            let gaveUp = Atomic<Bool>(false)
            async let roundTrips = blocking { () -> [Duration?] in
                var roundTrips: [Duration?] = []
                var nonce: UInt64 = 1
                while !gaveUp.load(ordering: .acquiring) {
                    let sent = ContinuousClock.now
                    pinger.send(.ping(Ping(nonce: nonce)))
                    var answered: Duration?
                    while let event = pinger.next(timeout: .seconds(1)) {
                        if case .message(.pong(let pong)) = event, pong.nonce == nonce {
                            answered = ContinuousClock.now - sent
                            break
                        }
                        if case .closed = event { break }
                    }
                    roundTrips.append(answered)
                    nonce += 1
                    // wall clock: a PING every 200 ms samples round trips over the lock's real duration (a measurement, not a wait)
                    Thread.sleep(forTimeInterval: 0.2)
                }
                return roundTrips
            }
            // The lock is held until the node gives up on the registration (after its busy_timeout), then released.
            let outcome = await Self.register(registrant, code: lockedCode, token: token, after: .milliseconds(500))
            gaveUp.store(true, ordering: .releasing)
            let releasedAt = clock.now
            #expect(await store.release(), "python3 could not commit its lock transaction: \(store.pythonLog)")
            let pings = await roundTrips

            let answered = pings.compactMap { $0 }
            let slowest = answered.max() ?? .zero
            print(
                "locked store: REGISTER → \(outcome.summary); lock released at \(outcome.after(releasedAt));"
                    + " \(answered.count)/\(pings.count) PINGs answered, slowest \(milliseconds(slowest))")

            // The loops never waited: every PING answered throughout the lock. A loop that waited on the lock would
            // answer after the 5 s busy_timeout; 2 s is far below that and generous for a CPU hog on both cores
            // (282 ms seen; 200 ms was the bound before).
            #expect(pings.count >= 20)
            #expect(answered.count == pings.count, "PINGs unanswered during the lock")
            #expect(slowest < .seconds(2))

            // Never success before the row: the node gave up after busy_timeout with GOAWAY internal_error, before
            // the lock was released, and sent no REGISTER_RESULT at all.
            #expect(outcome.result == nil, "REGISTER_RESULT during the lock: \(String(describing: outcome.result))")
            #expect(outcome.goAway?.reason == .internalError)
            let closedAt = try #require(outcome.closedAt, "the registering device was left hanging")
            #expect(closedAt - outcome.sentAt >= .milliseconds(4500), "gave up before busy_timeout")
            #expect(closedAt < releasedAt)

            // Let the node finish with the registrant's connection (it waits up to 2 s for a close_notify this peer
            // never sends: its log says when it is done) and write whatever queued behind the lock: a code made now
            // is acknowledged once committed, behind every commit queued before it.
            try await Self.waitForDisconnects(1, harness)
            _ = try await harness.supporter.createCode()
            let trail = try harness.supporter.auditEvents(code: lockedCode)
            #expect(!trail.contains { $0.kind == .deviceOnline })
            #expect(
                !trail.contains { $0.kind == .deviceOffline },
                "the audit trail says a device went offline that it never recorded online: \(trail.map(\.kind))")
            #expect(harness.supporter.code(lockedCode)?.state == .open)
            #expect(
                !harness.supporterEvents.all.contains { $0.code == lockedCode },
                "supporters heard of a registration that was never recorded: \(harness.supporterEvents.all.filter { $0.code == lockedCode })")
            #expect(harness.supporter.code(onlineCode)?.state == .online)

            // Once the lock is gone the same code registers at once.
            let (joined, device) = try await join(harness, code: lockedCode)
            defer { withExtendedLifetime(device) {} }
            #expect(joined != nil && joined! < .seconds(2))
            #expect(try harness.supporter.auditEvents(code: lockedCode).contains { $0.kind == .deviceOnline })
            // The supporters' first news of the code is this join's: anything announced for the refused registration
            // would have come before it.
            let online = await harness.supporterEvent(on: lockedCode) { if case .deviceOnline = $0 { true } else { false } }
            #expect(online != nil, "supporters never heard the device come online")
            let heard = harness.supporterEvents.all.filter { $0.code == lockedCode }.map(\.event)
            #expect(heard.first.map { if case .deviceOnline = $0 { true } else { false } } == true, "\(heard)")
        }

        /// Waits until the node has logged the end of `count` device connections in all (its last step with one,
        /// after the close_notify it waited for, or after giving up on it).
        private static func waitForDisconnects(_ count: Int, _ harness: NodeHarness) async throws {
            try await eventually("\(count) device connections to end") {
                harness.supporterLog.all.count(where: { $0.hasPrefix("device at ") && $0.contains(" disconnected: ") })
                    >= count ? true : nil
            }
        }

        /// With the writer stuck behind the lock, a store queue of one job fills: the registration it cannot take is
        /// refused at once (GOAWAY `internal_error`) and never announced, the one queued behind the stuck job is
        /// acknowledged only after the lock is released, and the stuck one fails after busy_timeout.
        @Test func aFullStoreQueueRefusesARegistrationWithoutAnnouncingIt() async throws {
            let store = try ExternallyLockedStore()
            defer { store.remove() }
            let harness = try NodeHarness(storePath: store.path, storeQueueCapacity: 1, captureLog: true)
            defer { harness.shutdown() }
            let port = harness.port
            let token = harness.token
            var codes: [String] = []
            var opened: [RawDevicePeer] = []
            for name in ["stuck", "queued", "refused"] {
                codes.append(try await harness.supporter.createCode().code)
                opened.append(try await Self.rawDevice(port: port, name: name, token: token))
            }
            let peers = opened
            defer { for peer in peers { peer.close() } }

            try await store.lock()
            let clock = ContinuousClock()
            // In order, 300 ms apart: the writer takes the first job and waits for the lock; the second fills the
            // queue; the third finds it full.
            let (stuckPeer, queuedPeer, refusedPeer) = (peers[0], peers[1], peers[2])
            let (stuckCode, queuedCode, refusedCode) = (codes[0], codes[1], codes[2])
            async let stuck = Self.register(stuckPeer, code: stuckCode, token: token, after: .milliseconds(300))
            async let queued = Self.register(queuedPeer, code: queuedCode, token: token, after: .milliseconds(600))
            async let refused = Self.register(refusedPeer, code: refusedCode, token: token, after: .milliseconds(900))
            let refusal = await refused
            // The lock is held until the writer gives up on the stuck job (after its busy_timeout); the queued job,
            // taken next, then finds the lock gone.
            let first = await stuck
            let releasedAt = clock.now
            #expect(await store.release(), "python3 could not commit its lock transaction: \(store.pythonLog)")
            let second = await queued
            print(
                "full store queue: stuck \(first.summary); queued \(second.summary), released at "
                    + "\(second.after(releasedAt)); refused \(refusal.summary)")

            #expect(refusal.result == nil, "the refused registration was answered: \(String(describing: refusal.result))")
            #expect(refusal.goAway?.reason == .internalError)
            #expect(refusal.closedAt.map { $0 - refusal.sentAt < .seconds(1) } == true, "not refused at once")
            #expect(first.result == nil)
            #expect(first.goAway?.reason == .internalError)
            #expect(second.result?.reason == .success)
            #expect(second.resultAt.map { $0 >= releasedAt } == true, "success before the lock was released")

            // The node is done with the two refused connections once it has logged their end (it waits up to 2 s for
            // a close_notify these peers never send). A device joined after that is announced, and its row committed,
            // behind anything those ends wrote or announced.
            try await Self.waitForDisconnects(2, harness)
            let later = try await harness.supporter.createCode().code
            let (joined, device) = try await join(harness, code: later)
            defer { withExtendedLifetime(device) {} }
            #expect(joined != nil, "a device could not join after the lock")
            _ = try #require(
                await harness.supporterEvent(on: later) { if case .deviceOnline = $0 { true } else { false } },
                "supporters never heard the later device come online")
            for (code, recorded) in zip(codes, [false, true, false]) {
                let trail = try harness.supporter.auditEvents(code: code).map(\.kind)
                #expect(trail.contains(.deviceOnline) == recorded, "\(code): \(trail)")
                #expect(!trail.contains(.deviceOffline), "\(code): \(trail)")
                let heard = harness.supporterEvents.all.filter { $0.code == code }.map(\.event)
                #expect(heard.contains { if case .deviceOnline = $0 { true } else { false } } == recorded, "\(code): \(heard)")
                #expect(harness.supporter.code(code)?.state == (recorded ? .online : .open))
            }
        }

        /// SPEC §13.1, audit commits one connection's events may wait for: with the store stalled, a device in a
        /// session whose VOIP_STATE frames (each one audited before it counts) reach 16 waiting commits is no longer
        /// read from, so its PING waits in TCP and gets no PONG; once the store moves again, every frame is handled in
        /// order, the PONG comes, and nothing was dropped.
        @Test func aDeviceWhoseEventsOutrunAStalledStoreIsNoLongerReadFromUntilItCatchesUp() async throws {
            let store = try ExternallyLockedStore()
            defer { store.remove() }
            let harness = try NodeHarness(storePath: store.path)
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let peer = try await Self.rawDevice(port: harness.port, name: "chatty", registeringOn: code, token: harness.token)
            defer { peer.close() }
            async let requested = harness.supporter.requestConnection(code: code, supporterName: "Ann", type: .screenShare)
            let started = await blocking { () -> Bool in
                while let event = peer.next(timeout: .seconds(10)) {
                    guard case .message(let message) = event else { return false }
                    if case .connectionRequest(let request) = message {
                        peer.send(.connectionResponse(ConnectionResponse(requestID: request.requestID, decision: .allow)))
                    }
                    if case .sessionStarted = message { return true }
                }
                return false
            }
            _ = try await requested
            try #require(started, "no session: \(peer.received)")

            try await store.lock()
            let clock = ContinuousClock()
            let lockedAt = clock.now
            let states: [VoIPCallState] = [.started, .ended]
            // 20: the rows a code gets per minute (SPEC §13.1), more than the 16 waiting commits that stop reading.
            let voip = (0..<CodeRegistry.Policy().deviceEventRowsPerCode).map {
                Message.voipState(VoIPState(state: states[$0 % 2], text: "frame \($0)"))
            }
            // 16 frames fill the connection's waiting commits; the rest, and the PING, arrive after reading stopped.
            peer.send(Array(voip[..<16]))
            // wall clock: the first 16 frames must be read before the rest arrive; the node shows no event when reading stops
            try await Task.sleep(for: .milliseconds(400))
            peer.send(Array(voip[16...]) + [.ping(Ping(nonce: 77))])
            let pongWhileStalled = await blocking { () -> Bool in
                while let event = peer.next(timeout: .milliseconds(1500)) {
                    if case .message(.pong) = event { return true }
                    if case .closed = event { return false }
                }
                return false
            }
            // Released well within the writer's busy_timeout (5 s): the stalled commits succeed.
            #expect(await store.release(), "python3 could not commit its lock transaction: \(store.pythonLog)")
            let releasedAt = clock.now
            let pongAfter = await blocking { () -> Duration? in
                while let event = peer.next(timeout: .seconds(5)) {
                    if case .message(.pong(let pong)) = event, pong.nonce == 77 { return ContinuousClock.now - releasedAt }
                    if case .closed = event { return nil }
                }
                return nil
            }
            print("stalled store: locked for \(milliseconds(releasedAt - lockedAt)); PONG \(pongAfter.map(milliseconds) ?? "none") after")

            #expect(!pongWhileStalled, "the node read past 16 waiting commits (a PONG came while the store was stalled)")
            #expect(pongAfter != nil, "no PONG once the store moved: \(peer.received.suffix(3))")
            #expect(peer.goAway == nil, "\(String(describing: peer.goAway))")
            let recorded = try await eventually("\(voip.count) voip_state rows") {
                let rows = try harness.supporter.auditEvents(code: code).filter { $0.kind == .voipState }
                return rows.count == voip.count ? rows : nil
            }
            #expect(recorded.map { $0.details["state"] } == voip.indices.map { "\(states[$0 % 2])" })
        }

        // MARK: repeatable device events

        @Test func aSessionErrorFloodWritesItsQuotaAndCostsTheDeviceItsConnection() async throws {
            let harness = try NodeHarness()
            defer { harness.shutdown() }
            let code = try await harness.supporter.createCode().code
            let peer = try await Self.rawDevice(port: harness.port, name: "flooder", registeringOn: code, token: harness.token)
            defer { peer.close() }
            let flood = 5_000
            let outcome = await blocking { () -> (closed: Bool, goAway: GoAway?) in
                // As fast as it can, never waiting: SESSION_ERRORs a device merely online may send (SPEC §5.12).
                for _ in 0..<(flood / 500) {
                    peer.send(Array(repeating: .sessionError(SessionError(reason: .featureDenied, text: "flood")), count: 500))
                }
                return (peer.drainUntilClosed(timeout: .seconds(20)), peer.goAway)
            }
            #expect(outcome.closed, "the node kept a flooding connection open")
            #expect(outcome.goAway?.reason == .rateLimited, "\(String(describing: outcome.goAway))")
            let quota = CodeRegistry.Policy().deviceEventRowsPerCode
            let rows = try harness.supporter.auditEvents(code: code).filter {
                $0.kind == .error && $0.details["what"] == "session_error"
            }
            #expect(rows.count == quota, "\(rows.count) session_error rows for \(flood) SESSION_ERRORs")
            // The others on the node are untouched: another device joins at once.
            let other = try await harness.supporter.createCode().code
            let (joined, device) = try await join(harness, code: other)
            defer { withExtendedLifetime(device) {} }
            #expect(joined != nil, "a device could not join beside the flood")
        }

        // MARK: keepalive (the cap on HELLO's keepalive_ms is tested in LinkStateMachineTests)

        /// One line from `fd` (without the newline), or nil at EOF or after `timeout`.
        static func readLine(_ fd: Int32, timeout: Duration) -> String? {
            var line: [UInt8] = []
            let clock = ContinuousClock()
            let end = clock.now + timeout
            while clock.now < end {
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard Glibc.poll(&descriptor, 1, 50) > 0 else { continue }
                var byte: UInt8 = 0
                guard read(fd, &byte, 1) == 1 else { return nil }
                if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
                line.append(byte)
            }
            return nil
        }
    }
}
