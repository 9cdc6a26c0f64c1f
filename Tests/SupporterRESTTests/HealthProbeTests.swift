import Foundation
import Testing
import TestSupport
import SupporterNode
import SupporterStores
import SupporterREST
import SupportRuntime

extension RESTIntegration {
    /// Issue 23: `/livez` and `/readyz`, unauthenticated, a status word and code only; ready flips to not ready while
    /// the store is unreachable and while the node drains, and back once the store is.
    @Suite struct HealthProbeTests {
        /// A started node (listening for devices) on `store`, with its REST API, and its probes over HTTPS.
        final class ProbedNode: Sendable {
            let fixture: RESTFixture
            var node: SupporterNode { fixture.node }

            init(store: StoreConfiguration) async throws {
                fixture = try await RESTFixture(accounts: [], store: store, listening: true)
            }

            /// `GET path` with curl (no credential): the status code and the body.
            func get(_ path: String) async throws -> (status: Int, body: String) {
                let output = NSTemporaryDirectory() + "probe-\(UUID().uuidString.prefix(8))"
                defer { try? FileManager.default.removeItem(atPath: output) }
                let curl = try ChildProcess(
                    "curl",
                    ["-s", "--max-time", "30", "--cacert", fixture.certificates.caPath, "-o", output, "-w",
                     "%{http_code}", "https://localhost:\(fixture.server.port)\(path)"],
                    stdout: .file(output + ".code"))
                _ = await curl.waitForExit(timeout: .seconds(60))
                defer { try? FileManager.default.removeItem(atPath: output + ".code") }
                let code = (try? String(contentsOfFile: output + ".code", encoding: .utf8)).flatMap { Int($0) } ?? 0
                return (code, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
            }

            /// Asks `path` until it answers `status` (a probe's answer changes when the node notices, not at once).
            func eventually(_ path: String, is status: Int, within limit: Duration = .seconds(60)) async throws
                -> (status: Int, body: String)
            {
                let started = ContinuousClock.now
                var last = try await get(path)
                while last.status != status, started.duration(to: .now) < limit {
                    // A probe polls, as a load balancer does; the node's state is not observable otherwise.
                    await wallClockPause(.milliseconds(200))
                    last = try await get(path)
                }
                return last
            }

            func stop() async { await fixture.stop() }
        }

        @Test("/livez and /readyz answer ok and ready; while the node drains /readyz is 503 and /livez still ok")
        func readinessFlipsWhileDraining() async throws {
            let probed = try await ProbedNode(store: StoreConfiguration())
            do {
                let live = try await probed.get("/livez")
                #expect(live.status == 200 && live.body == "ok\n", "\(live)")
                let ready = try await probed.get("/readyz")
                #expect(ready.status == 200 && ready.body == "ready\n", "\(ready)")
                probed.node.drain()
                let draining = try await probed.get("/readyz")
                #expect(draining.status == 503 && draining.body == "not ready\n", "\(draining)")
                #expect(try await probed.get("/livez").status == 200)
            } catch {
                await probed.stop()
                throw error
            }
            await probed.stop()
        }

        @Test("on PostgreSQL /readyz is 503 while the database is down and 200 again once it is back")
        func readinessFollowsTheDatabase() async throws {
            let database = try ThrowawayPostgres()
            defer { database.stop() }
            var store = StoreConfiguration()
            store.backend = .postgres(database.connectionString)
            store.presenceLease = .seconds(3)
            let probed = try await ProbedNode(store: store)
            do {
                let ready = try await probed.eventually("/readyz", is: 200)
                #expect(ready.status == 200 && ready.body == "ready\n", "\(ready)")
                try database.halt()
                let down = try await probed.eventually("/readyz", is: 503)
                #expect(down.status == 503 && down.body == "not ready\n", "\(down)")
                // Alive all the while: the loops never wait for the database.
                #expect(try await probed.get("/livez").status == 200)
                try database.startAgain()
                let back = try await probed.eventually("/readyz", is: 200)
                #expect(back.status == 200, "\(back)")
            } catch {
                await probed.stop()
                throw error
            }
            await probed.stop()
        }
    }
}
