import SupportRuntime
import SupportUtilities
import Testing
import SupportWire
import TestSupport

@Suite("descriptor budget")
struct DescriptorBudgetTests {
    @Test("a quarter of the limit is kept back, at least 64 and at most 4,096")
    func reserve() {
        #expect(DescriptorBudget(limit: 96).capacity == 32)
        #expect(DescriptorBudget(limit: 1024).reserve == 256)
        #expect(DescriptorBudget(limit: 1024).capacity == 768)
        #expect(DescriptorBudget(limit: 1_048_576).reserve == 4096)
        #expect(DescriptorBudget(limit: 10).capacity == 1)
    }

    @Test("places run out at the capacity and come back when released")
    func placesComeBack() {
        let budget = DescriptorBudget(limit: 67)
        var places = (0..<3).compactMap { _ in budget.acquire() }
        #expect(places.count == 3)
        #expect(budget.acquire() == nil)
        #expect(budget.inUse == 3)
        places.removeLast()
        #expect(budget.inUse == 2)
        #expect(budget.acquire() != nil)  // taken and released at once
        #expect(budget.inUse == 2)
    }
}
