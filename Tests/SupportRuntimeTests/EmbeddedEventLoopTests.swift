import Synchronization
import Testing
import TestSupport
@testable import SupportRuntime
import SupportUtilities
import SupportWire

/// The embedded loop: no thread, a virtual clock the test moves; timers fire in order, at their virtual time.
@Suite struct EmbeddedEventLoopTests {
    @Test func timersFireInOrderAtTheirVirtualTimeWithoutWaiting() throws {
        let loop = try EventLoop.embedded()
        let fired = Locked<[String]>([])
        let start = loop.now
        loop.execute {
            loop.schedule(at: start + .seconds(30)) { fired.withLock { $0.append("30 s at \(loop.now.since(start))") } }
            loop.schedule(at: start + .seconds(10)) { fired.withLock { $0.append("10 s at \(loop.now.since(start))") } }
            let cancelled = loop.schedule(at: start + .seconds(20)) { fired.withLock { $0.append("never") } }
            cancelled.cancel()
        }
        let wall = ContinuousClock.now
        loop.advance(by: .seconds(15))
        #expect(fired.withLock { $0 } == ["10 s at 10.0 seconds"])
        loop.advance(by: .seconds(60))
        #expect(fired.withLock { $0 } == ["10 s at 10.0 seconds", "30 s at 30.0 seconds"])
        #expect(loop.now.since(start) == .seconds(75))
        #expect(ContinuousClock.now - wall < .seconds(1))  // 75 virtual seconds, no sleeping
    }

    @Test func workRunsOnlyWhenTheTestDrivesTheLoopAndOnItsThread() throws {
        let loop = try EventLoop.embedded()
        let ran = Locked(false)
        loop.execute {
            loop.preconditionInLoop()
            ran.withLock { $0 = true }
        }
        #expect(ran.withLock { $0 } == false)
        #expect(!loop.inLoop)
        loop.advance()
        #expect(ran.withLock { $0 })
        #expect(!loop.inLoop)  // the driving thread is the loop's only while it drives
        #expect(!EventLoop.isOnLoopThread)
    }

    @Test func aTimerScheduledByATimerFiresInTheSameAdvance() throws {
        let loop = try EventLoop.embedded()
        let ticks = Locked(0)
        @Sendable func tick() {
            ticks.withLock { $0 += 1 }
            loop.schedule(at: loop.now + .seconds(1)) { tick() }
        }
        loop.execute { loop.schedule(at: loop.now + .seconds(1)) { tick() } }
        loop.advance(by: .seconds(10))
        #expect(ticks.withLock { $0 } == 10)
    }
}
