import SupportUtilities
import Testing

@Suite struct RingBufferTests {
    @Test func keepsFirstInFirstOutAcrossGrowthAndWrapAround() {
        var ring = RingBuffer<Int>(initialCapacity: 4)
        var model: [Int] = []
        var next = 0
        // Interleaved appends and removals that wrap the head around the storage many times while it grows.
        for round in 0..<2_000 {
            for _ in 0..<(round % 7) {
                ring.append(next)
                model.append(next)
                next += 1
            }
            for _ in 0..<(round % 5) {
                #expect(ring.popFirst() == (model.isEmpty ? nil : model.removeFirst()))
            }
            #expect(ring.count == model.count)
            #expect(ring.first == model.first)
        }
        #expect(ring.removeAll() == model)
        #expect(ring.isEmpty)
        #expect(ring.popFirst() == nil)
    }

    @Test func drainsHundredsOfThousandsOfElementsInLinearTime() {
        // 300,000 pushes then pops: quadratic removal (Array.removeFirst) would move ~4.5e10 elements here.
        var ring = RingBuffer<Int>()
        for value in 0..<300_000 { ring.append(value) }
        var expected = 0
        while let value = ring.popFirst() {
            if value != expected { break }
            expected += 1
        }
        #expect(expected == 300_000)
    }
}
