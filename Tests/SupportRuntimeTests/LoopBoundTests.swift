import Synchronization
import Testing

@testable import SupportRuntime

@Suite struct LoopBoundTests {
    @Test func theValueIsReadAndWrittenOnItsLoop() throws {
        let loop = try EventLoop.embedded()
        let bound = LoopBound(handingOver: 1, to: loop)
        let seen = Mutex(0)
        loop.execute {
            bound.value += 1
            seen.withLock { $0 = bound.value }
        }
        loop.advance()
        #expect(seen.withLock { $0 } == 2)
    }

    @Test func touchingItOffItsLoopStopsTheProcessNamingTheLoop() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = try EventLoop.embedded(name: "rsup-bound-test")
            let bound = LoopBound(handingOver: 1, to: loop)
            // This thread is not the loop's (an embedded loop's thread is whoever advances it, while it does).
            _ = bound.value
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("not on event loop rsup-bound-test"), "\(stderr)")
    }
}
