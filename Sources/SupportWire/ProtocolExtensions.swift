public import SupportVocabulary
/// The protocol extensions of SPEC §15.1, announced in HELLO / HELLO_ACK `features` (an id space of their own,
/// separate from the device capabilities of §4.3). An extension is in effect on a connection when HELLO_ACK lists it.
public struct ProtocolExtensions: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Per-feature access control (SPEC §15.3), extension id `0x0001`.
    public static let accessControl = ProtocolExtensions(rawValue: 1 << 0)
    /// In-session messages (SPEC §15.4), extension id `0x0002`; requires access control.
    public static let sessionMessages = ProtocolExtensions(rawValue: 1 << 1)
    /// Session resume (SPEC §15.5), extension id `0x0003`.
    public static let sessionResume = ProtocolExtensions(rawValue: 1 << 2)
    /// Withdrawing a feature ask (SPEC §15.3, FEATURE_WITHDRAW), extension id `0x0004`; requires access control.
    public static let askWithdraw = ProtocolExtensions(rawValue: 1 << 3)

    /// Everything protocol 1.1 defines, with revision 1.2's ask withdrawal.
    public static let all: ProtocolExtensions = [.accessControl, .sessionMessages, .sessionResume, .askWithdraw]
    /// Nothing: a node in 1.0 mode.
    public static let none: ProtocolExtensions = []

    private static let table: [(ProtocolExtensions, UInt16, String)] = [
        (.accessControl, 0x0001, "access_control"), (.sessionMessages, 0x0002, "session_messages"),
        (.sessionResume, 0x0003, "session_resume"), (.askWithdraw, 0x0004, "ask_withdraw"),
    ]

    /// The extensions a HELLO or HELLO_ACK `features` list names at version 1; other entries are ignored.
    public init(announced features: FeatureSet) {
        var result = ProtocolExtensions()
        for (member, id, _) in Self.table where features.version(of: Feature.ID(rawValue: id)) == 1 {
            result.insert(member)
        }
        self = result
    }

    /// The `features` list that announces these extensions, each at version 1.
    public var announcement: FeatureSet {
        FeatureSet(Self.table.filter { contains($0.0) }.map { Feature(Feature.ID(rawValue: $0.1), version: 1) })
    }

    /// What a responder supporting `self` puts in effect for an initiator that offered `offered` (SPEC §15.1): the
    /// common extensions, without session messages or ask withdrawal unless access control is in effect too.
    public func inEffect(offered: ProtocolExtensions) -> ProtocolExtensions {
        var result = intersection(offered)
        if !result.contains(.accessControl) { result.subtract([.sessionMessages, .askWithdraw]) }
        return result
    }

    /// SPEC names, e.g. `access_control, session_resume`; `none` when empty.
    public var description: String {
        let names = Self.table.filter { contains($0.0) }.map(\.2)
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }
}
