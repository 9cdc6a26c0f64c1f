import Foundation
public import SupportSession
import SupportUtilities
import SupportWire
import SupportVocabulary

/// A registration as stored for a takeover by another node (``SupporterSessionMachine/ResumeSnapshot``), in JSON in
/// `device_presence.resume`. The resume secrets are kept as SHA-256 digests only: reading the database does not
/// let anyone resume a device's session.
public struct StoredResumeState: Codable, Sendable, Hashable {
    public var code: String
    public var phase: String
    public var requestID: UInt32?
    public var supporterName: String?
    public var connectionType: UInt8?
    public var requestedFeatures: [[UInt16]]?
    public var confirmFeatures: [[UInt16]]?
    public var capabilities: [[UInt16]]
    public var lastRequestID: UInt32
    public var granted: [[UInt16]]
    public var extensions: UInt8
    public var lastEndedRequestID: UInt32?
    public var lastEndedReason: UInt8?
    /// Hex SHA-256 of the current secret, then of the one it replaced.
    public var secretDigests: [String]

    public init(_ snapshot: SupporterSessionMachine.ResumeSnapshot) {
        code = snapshot.code
        phase = snapshot.phase.rawValue
        requestID = snapshot.request?.requestID
        supporterName = snapshot.request?.supporterName
        connectionType = snapshot.request?.connectionType.rawValue
        requestedFeatures = snapshot.request.map { Self.pairs($0.requestedFeatures) }
        confirmFeatures = snapshot.request?.confirmFeatures.map(Self.pairs)
        capabilities = Self.pairs(snapshot.deviceCapabilities)
        lastRequestID = snapshot.lastRequestID
        granted = Self.pairs(snapshot.granted)
        extensions = snapshot.registrationExtensions.rawValue
        lastEndedRequestID = snapshot.lastEndedRequestID
        lastEndedReason = snapshot.lastEndedReason?.rawValue
        secretDigests = snapshot.secrets.map(Self.digest)
    }

    /// Whether `secret` is one of the stored ones.
    public func accepts(secret: String) -> Bool {
        let presented = Self.digest(secret)
        return secretDigests.contains { ConstantTime.equal(Array($0.utf8), Array(presented.utf8)) }
    }

    /// The snapshot, with `secret` (checked with ``accepts(secret:)``) as the current secret.
    public func snapshot(secret: String) -> SupporterSessionMachine.ResumeSnapshot? {
        guard let phase = SupporterSessionMachine.ResumeSnapshot.Phase(rawValue: phase) else { return nil }
        var request: ConnectionRequest?
        if let requestID, let supporterName, let type = connectionType.flatMap(ConnectionType.init(rawValue:)) {
            request = ConnectionRequest(
                requestID: requestID, supporterName: supporterName, connectionType: type,
                requestedFeatures: Self.features(requestedFeatures ?? []), confirmFeatures: confirmFeatures.map(Self.features))
        }
        return SupporterSessionMachine.ResumeSnapshot(
            code: code, phase: phase, request: request, deviceCapabilities: Self.features(capabilities),
            lastRequestID: lastRequestID, granted: Self.features(granted),
            registrationExtensions: ProtocolExtensions(rawValue: extensions), lastEndedRequestID: lastEndedRequestID,
            lastEndedReason: lastEndedReason.map(ReasonCode.init(rawValue:)), secrets: [secret])
    }

    public var json: String { (try? JSONEncoder().encode(self)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}" }

    public static func decode(_ text: String) -> StoredResumeState? {
        try? JSONDecoder().decode(StoredResumeState.self, from: Data(text.utf8))
    }

    private static func digest(_ secret: String) -> String {
        SHA256.hash(Array(secret.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    private static func pairs(_ features: FeatureSet) -> [[UInt16]] { features.map { [$0.id.rawValue, $0.version] } }

    private static func features(_ pairs: [[UInt16]]) -> FeatureSet {
        FeatureSet(pairs.compactMap { $0.count == 2 ? Feature(Feature.ID(rawValue: $0[0]), version: $0[1]) : nil })
    }
}
