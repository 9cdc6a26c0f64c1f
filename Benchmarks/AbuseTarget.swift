import SupporterNode
import SupporterStore
import SupporterStores
import SupporterREST
import SupportRuntime
import SupportWire
import SupportUtilities
import SupportLink
import SupportSession
import SupporterCore
import DeviceNode
import SupportPostgres
import SupporterModel

/// The node the `abuse` and `abuse-rest` groups attack: a supporter node on a file-backed SQLite store with fresh
/// development certificates, the REST API beside it as `rsup-supporter serve --api-listen` runs it, and an owner that
/// reads its events. ``stop()`` undoes it all.
final class AbuseTarget {
    let node: SupporterNode
    let rest: RESTServer
    /// The certificates and the store; removed by ``stop()``.
    let directory: String
    let configuration: SupporterNodeConfiguration
    private let drain: Task<Void, Never>

    private init(
        node: SupporterNode, rest: RESTServer, directory: String, configuration: SupporterNodeConfiguration
    ) {
        self.node = node
        self.rest = rest
        self.directory = directory
        self.configuration = configuration
        let events = node.events
        drain = Task.detached { for await _ in events {} }
    }

    /// Starts it, `loopCount` device loops (the node's default when nil); nil after printing why not, as `group`.
    static func start(group: String, loopCount: Int? = nil) -> AbuseTarget? {
        guard let directory = NodesBenchmark.makeCertificates() else {
            print("   \(group): cannot make certificates; skipped\n")
            return nil
        }
        var configuration = SupporterNodeConfiguration(
            tls: .makeServerConfiguration(
                certificateChain: .file(directory + "/supporter.pem"), privateKey: .file(directory + "/supporter.key")))
        configuration.port = 0
        if let loopCount { configuration.loopCount = loopCount }
        let store = StoreConfiguration(path: directory + "/node.sqlite")
        let node: SupporterNode
        do throws(SupporterNodeError) {
            let opened = try store.openForNode()
            node = try SupporterNode(configuration: configuration, store: opened.engine, cluster: opened.cluster)
            try node.start()
        } catch {
            print("   \(group): cannot start the supporter node: \(error)\n")
            remove(directory)
            return nil
        }
        do throws(TransportError) {
            let rest = try RESTServer(
                node: node,
                configuration: RESTServerConfiguration(host: "127.0.0.1", port: 0).withIdentity(of: configuration.tls))
            return AbuseTarget(node: node, rest: rest, directory: directory, configuration: configuration)
        } catch {
            print("   \(group): cannot start the REST server: \(error)\n")
            node.shutdown()
            remove(directory)
            return nil
        }
    }

    /// The event reader, the REST API and the node stop; the folder goes.
    func stop() {
        drain.cancel()
        let rest = self.rest
        blockingAwait { await rest.shutdown() }
        node.shutdown()
        Self.remove(directory)
    }

    private static func remove(_ directory: String) {
        if let remove = ChildProcess("rm", ["rm", "-rf", "--", directory], captureOutput: false) { remove.wait() }
    }
}
