import Testing

@testable import DeviceNode

/// The order a device dials a service's nodes in (issue 22 item 8, SPEC §15.5): the node it was on first, then a
/// spread drawn from its code, so that the devices of a node that died do not all land on one survivor.
@Suite struct DeviceSessionDialOrderTests {
    /// Session codes as the node makes them (`123-456-789`), `count` of them, from a fixed sequence.
    static func codes(_ count: Int) -> [String] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let digits = String(format9: state >> 20)
            return "\(digits.prefix(3))-\(digits.dropFirst(3).prefix(3))-\(digits.suffix(3))"
        }
    }

    @Test(arguments: [3, 4, 5])
    func theDevicesOfADeadNodeSpreadOverTheSurvivors(nodes: Int) {
        let codes = Self.codes(1_000)
        for dead in 0..<nodes {
            var landed = [Int](repeating: 0, count: nodes)
            for code in codes { landed[DeviceSession.dialOrder(nodes: nodes, first: dead, code: code)[1]] += 1 }
            #expect(landed[dead] == 0, "a device redials the node it lost only first")
            let busiest = landed.max() ?? 0
            // Issue 22's bound: no survivor takes more than 60 %. An even spread over n − 1 survivors is 1/(n − 1).
            #expect(Double(busiest) <= 0.6 * Double(codes.count), "node \(dead) died: \(landed)")
            let even = Double(codes.count) / Double(nodes - 1)
            #expect(Double(busiest) < even * 1.15, "node \(dead) died: \(landed), even would be \(even)")
        }
    }

    @Test func theOrderStartsWhereTheSessionWasTriesEveryNodeOnceAndIsStableForACode() {
        for code in Self.codes(50) {
            for first in 0..<4 {
                let order = DeviceSession.dialOrder(nodes: 4, first: first, code: code)
                #expect(order.first == first)
                #expect(order.sorted() == [0, 1, 2, 3])
                #expect(order == DeviceSession.dialOrder(nodes: 4, first: first, code: code))
            }
        }
        #expect(DeviceSession.dialOrder(nodes: 1, first: 0, code: "123-456-789") == [0])
        #expect(DeviceSession.dialOrder(nodes: 0, first: 0, code: "123-456-789") == [])
    }
}

extension String {
    /// `value` modulo 10⁹ as nine decimal digits.
    fileprivate init(format9 value: UInt64) {
        let digits = String(value % 1_000_000_000)
        self = String(repeating: "0", count: 9 - digits.count) + digits
    }
}
