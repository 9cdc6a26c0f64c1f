/// PING (`0x03`, SPEC §5.3): asks the peer to prove it is alive; answered by ``Pong`` with the same nonce.
public struct Ping: Hashable, Sendable {
    public var nonce: UInt64
    public init(nonce: UInt64) { self.nonce = nonce }
}

/// PONG (`0x04`, SPEC §5.3): the answer to a ``Ping``, echoing its nonce.
public struct Pong: Hashable, Sendable {
    public var nonce: UInt64
    public init(nonce: UInt64) { self.nonce = nonce }
}

private let nonceField = IntegerField<UInt64>(tag: 1, name: "nonce")

extension Ping: WireMessage {
    static let frameType = FrameType.ping
    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(nonce: try reader.required(nonceField))
    }
    func write(to writer: inout FieldWriter) throws(WireError) { try writer.write(nonceField, nonce) }
}

extension Pong: WireMessage {
    static let frameType = FrameType.pong
    init(reading reader: inout FieldReader) throws(WireError) {
        try reader.requireFields([1])
        self.init(nonce: try reader.required(nonceField))
    }
    func write(to writer: inout FieldWriter) throws(WireError) { try writer.write(nonceField, nonce) }
}
