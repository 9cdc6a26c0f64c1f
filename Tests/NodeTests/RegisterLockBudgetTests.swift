import DeviceNode
import SupporterNode
import SupportRuntime
import SupporterStores
import TestSupport
import Testing

extension NodeIntegration {
    /// What a device costs the node's locks (``SupporterNode`` keeps devices and people under separate locks): a
    /// supporter node and a device SDK on one embedded loop, so that nothing runs on the node but what the test drives
    /// (the sweep waits for virtual time, which does not pass here).
    @Suite(.serialized, .timeLimit(.minutes(2))) struct RegisterLockBudgetTests {
        /// One connection admitted (one take of the session lock), then one REGISTER: its decision — token, registry
        /// and the session machine's new state — in one take, and the registry's apply once its audit row has
        /// committed in one more. The people lock is never taken.
        @Test func aRegisterTakesTheSessionLockOnceToDecideOnceToApplyAndThePeopleLockNever() async throws {
            let certificates = try TestCertificates.make()
            defer { certificates.remove() }
            let loop = try EventLoop.embedded()
            defer { loop.shutdown() }
            var configuration = SupporterNodeConfiguration(
                tls: .makeServerConfiguration(
                    certificateChain: .file(certificates.server.certificatePath),
                    privateKey: .file(certificates.server.keyPath)))
            configuration.port = 0
            let supporter = try SupporterNode(
                configuration: configuration, store: try StoreConfiguration().open().engine,
                loops: EventLoopGroup(loops: [loop]), clock: loop.clock)
            try supporter.start()
            defer { supporter.shutdown() }
            loop.advance()
            let token = try supporter.issueAPIToken()
            let code = try await supporter.createCode().record.code
            let device = try DeviceNode(
                configuration: DeviceConfiguration(
                    host: "127.0.0.1", port: supporter.port ?? 0,
                    tls: .makeClientConfiguration(trustRoots: .file(certificates.caPath)), apiToken: token,
                    deviceName: "Pixel 8"),
                loops: EventLoopGroup(loops: [loop]))

            let before = supporter.lockTakes
            let session = try device.connect(toSessionCode: code)
            try await drive(loop, "the device online") {
                if case .online = session.state { return true }
                return false
            }
            let after = supporter.lockTakes
            #expect(after.sessions - before.sessions == 1 + 2, "admission, then the REGISTER's decision and its apply")
            #expect(after.people == before.people, "a device's step took the people lock")

            // Leaving, so that the node's shutdown finds no link to wait for.
            session.leave()
            try await drive(loop, "the code free again") { supporter.code(code)?.state == .open }
        }

        /// Drives `loop` (no virtual time passing) until `condition` holds. Only driving the loop runs the sockets'
        /// I/O of both nodes, so this turns it and looks again, with a pause of a millisecond between turns (nothing
        /// announces readiness to a test that drives the loop itself); past ``waitDeadline`` it fails.
        private func drive(_ loop: EventLoop, _ what: String, until condition: () -> Bool) async throws {
            let start = ContinuousClock.now
            while true {
                loop.advance()
                if condition() { return }
                guard ContinuousClock.now - start < waitDeadline else {
                    throw WaitTimeout(description: "\(what): not after \(waitDeadline) of driving the loop")
                }
                await wallClockPause(.milliseconds(1))
            }
        }
    }
}
