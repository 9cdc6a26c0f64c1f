import Testing
@testable import SupportWire
import TestSupport
import SupportVocabulary

/// SPEC §15.1: the extensions a HELLO / HELLO_ACK `features` list names, and which are in effect on a connection.
@Suite struct ProtocolExtensionsTests {
    /// Every combination of the four extensions.
    static let subsets: [ProtocolExtensions] = (0..<16).map { ProtocolExtensions(rawValue: UInt8($0)) }

    private static func features(_ pairs: [(UInt16, UInt16)]) -> FeatureSet {
        FeatureSet(pairs.map { Feature(Feature.ID(rawValue: $0.0), version: $0.1) })
    }

    @Test func announcesEachExtensionByItsIDAtVersion1() {
        #expect(ProtocolExtensions.all.announcement == Self.features([(1, 1), (2, 1), (3, 1), (4, 1)]))
        #expect(ProtocolExtensions.askWithdraw.announcement == Self.features([(4, 1)]))
        #expect(ProtocolExtensions.sessionResume.announcement == Self.features([(3, 1)]))
        #expect(ProtocolExtensions([.accessControl, .sessionResume]).announcement == Self.features([(1, 1), (3, 1)]))
        #expect(ProtocolExtensions.none.announcement.isEmpty)
    }

    @Test(arguments: subsets)
    func readsBackWhatItAnnounces(_ extensions: ProtocolExtensions) {
        #expect(ProtocolExtensions(announced: extensions.announcement) == extensions)
    }

    /// A 1.0 node sends an empty list (SPEC §5.1): nothing is in effect.
    @Test func readsNothingFromAnEmptyList() {
        #expect(ProtocolExtensions(announced: []) == .none)
    }

    /// Unknown extension ids are ignored, and so is a known id at another version (SPEC §15.1: "with the same
    /// version"); the device capability ids of §4.3 are a separate space and mean nothing here.
    @Test func ignoresUnknownIDsAndOtherVersions() {
        let announced = Self.features([(0x0000, 1), (0x0001, 2), (0x0002, 1), (0x0003, 1), (0x0004, 2), (0x0005, 1), (0xFFFF, 1)])
        #expect(ProtocolExtensions(announced: announced) == [.sessionMessages, .sessionResume])
        #expect(ProtocolExtensions(announced: Self.features([(0x0100, 1), (0x0003, 65535)])) == .none)
    }

    @Test func putsInEffectOnlyWhatBothSidesSupport() {
        #expect(ProtocolExtensions.all.inEffect(offered: .all) == .all)
        #expect(ProtocolExtensions.all.inEffect(offered: .none) == .none)
        #expect(ProtocolExtensions.none.inEffect(offered: .all) == .none)
        #expect(ProtocolExtensions.all.inEffect(offered: .sessionResume) == .sessionResume)
        let withoutMessages: ProtocolExtensions = [.accessControl, .sessionResume]
        #expect(withoutMessages.inEffect(offered: .all) == withoutMessages)
    }

    /// session_messages requires access_control (SPEC §15.1 table): dropped when access control is not in effect,
    /// whichever side lacks it.
    @Test func dropsSessionMessagesWithoutAccessControl() {
        #expect(ProtocolExtensions.all.inEffect(offered: [.sessionMessages, .sessionResume]) == .sessionResume)
        #expect(ProtocolExtensions([.sessionMessages, .sessionResume]).inEffect(offered: .all) == .sessionResume)
        #expect(ProtocolExtensions.sessionMessages.inEffect(offered: .sessionMessages) == .none)
        let withAccessControl: ProtocolExtensions = [.accessControl, .sessionMessages]
        #expect(ProtocolExtensions.all.inEffect(offered: withAccessControl) == withAccessControl)
    }

    /// ask_withdraw requires access_control too (revision 1.2).
    @Test func dropsAskWithdrawWithoutAccessControl() {
        #expect(ProtocolExtensions.all.inEffect(offered: [.askWithdraw, .sessionResume]) == .sessionResume)
        #expect(ProtocolExtensions.all.inEffect(offered: [.accessControl, .askWithdraw]) == [.accessControl, .askWithdraw])
    }

    /// Over every pair: the result is the common set, less session_messages and ask_withdraw when access_control is
    /// not common.
    @Test(arguments: subsets, subsets)
    func inEffectIsTheCommonSetWithItsRequirementsMet(_ supported: ProtocolExtensions, _ offered: ProtocolExtensions) {
        let result = supported.inEffect(offered: offered)
        var expected = supported.intersection(offered)
        if !expected.contains(.accessControl) { expected.subtract([.sessionMessages, .askWithdraw]) }
        #expect(result == expected)
        #expect(result == offered.inEffect(offered: supported))
        #expect(result.inEffect(offered: result) == result)
    }

    @Test func namesExtensionsAsSPECDoes() {
        #expect(ProtocolExtensions.all.description == "access_control, session_messages, session_resume, ask_withdraw")
        #expect(ProtocolExtensions.sessionResume.description == "session_resume")
        #expect(ProtocolExtensions.none.description == "none")
    }
}
