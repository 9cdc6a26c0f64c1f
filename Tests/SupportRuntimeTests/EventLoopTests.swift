import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport
@testable import SupportRuntime
import SupportUtilities
import SupportWire

/// The loop's own rules: confinement, refused work after shutdown, no blocking on a loop thread, timers, epoll errors.
@Suite(.timeLimit(.minutes(2))) struct EventLoopTests {
    /// Starts a loop, runs `body`, and stops the loop whatever happens.
    private func withLoop(
        onError: (@Sendable (TransportError) -> Void)? = nil, _ body: (EventLoop) async throws -> Void
    ) async throws {
        let loop = try EventLoop.start(name: "test-loop", onError: onError)
        do {
            try await body(loop)
        } catch {
            loop.shutdown()
            try loop.waitUntilFinished()
            throw error
        }
        loop.shutdown()
        try loop.waitUntilFinished()
    }

    @Test func inLoopIsTrueOnlyOnTheLoopsOwnThread() async throws {
        try await withLoop { loop in
            let other = try EventLoop.start(name: "other-loop")
            defer { other.shutdown() }
            #expect(!loop.inLoop)
            #expect(!EventLoop.isOnLoopThread)
            let seen = try await loop.submit { (loop.inLoop, other.inLoop, EventLoop.isOnLoopThread) }
            #expect(seen.0)
            #expect(!seen.1)
            #expect(seen.2)
        }
    }

    @Test func executeAfterShutdownIsRefusedAndTheWorkNeverRuns() async throws {
        let loop = try EventLoop.start(name: "test-loop")
        loop.shutdown()
        let ran = Atomic<Bool>(false)
        let accepted = loop.execute { ran.store(true, ordering: .relaxed) }
        try loop.waitUntilFinished()
        let didRun = ran.load(ordering: .relaxed)
        #expect(!accepted)
        #expect(!didRun)
    }

    @Test func everyAcceptedWorkRunsEvenWhenShutdownFollowsAtOnce() async throws {
        for _ in 0..<20 {
            let loop = try EventLoop.start(name: "test-loop")
            let ran = Atomic<Int>(0)
            var accepted = 0
            for index in 0..<2_000 {
                if index == 1_000 { loop.shutdown() }
                if loop.execute({ ran.wrappingAdd(1, ordering: .relaxed) }) { accepted += 1 }
            }
            try loop.waitUntilFinished()
            let runs = ran.load(ordering: .relaxed)
            #expect(accepted == 1_000)
            #expect(runs == accepted)
        }
    }

    @Test func submitReturnsTheResultComputedOnTheLoop() async throws {
        try await withLoop { loop in
            let value = try await loop.submit { loop.inLoop ? 42 : -1 }
            #expect(value == 42)
        }
    }

    @Test func submitAfterShutdownThrowsInsteadOfHanging() async throws {
        let loop = try EventLoop.start(name: "test-loop")
        loop.shutdown()
        try loop.waitUntilFinished()
        await #expect { _ = try await loop.submit { 1 } } throws: {
            ($0 as? TransportError)?.kind == .eventLoopShutDown
        }
    }

    @Test func waitingForALoopFromALoopThreadIsRefused() async throws {
        try await withLoop { loop in
            let group = try EventLoopGroup(loopCount: 2)
            let errors = try await loop.submit { () -> [TransportError.Kind?] in
                var kinds: [TransportError.Kind?] = []
                do throws(TransportError) { try loop.waitUntilFinished() } catch { kinds.append(error.kind) }
                do throws(TransportError) { try group.shutdownAndWait() } catch { kinds.append(error.kind) }
                return kinds
            }
            #expect(errors == [.blockingOnEventLoop, .blockingOnEventLoop])
            // Nothing was stopped by the refused call: the group still runs work.
            #expect(try await group.loops[1].submit { 7 } == 7)
            try group.shutdownAndWait()
        }
    }

    @Test func blockingNameLookupOnALoopThreadIsRefusedButLiteralsAreFine() async throws {
        try await withLoop { loop in
            let outcome = try await loop.submit { () -> (TransportError.Kind?, Int) in
                var kind: TransportError.Kind?
                do throws(TransportError) {
                    _ = try SocketAddress.resolve(host: "localhost", port: 80)
                } catch {
                    kind = error.kind
                }
                let literal = (try? SocketAddress.resolve(host: "127.0.0.1", port: 80))?.count ?? 0
                return (kind, literal)
            }
            #expect(outcome.0 == .blockingOnEventLoop)
            #expect(outcome.1 == 1)
        }
    }

    @Test func cancelledTimersLeaveTheHeap() async throws {
        try await withLoop { loop in
            let counts = try await loop.submit { () -> (Int, Int, Int) in
                let far = Deadline.now() + .seconds(3600)
                var timers: [LoopTimer] = []
                timers.reserveCapacity(100_000)
                for index in 0..<100_000 {
                    timers.append(loop.schedule(at: far + .milliseconds(index % 977)) {})
                }
                let armed = loop.scheduledTimerCount
                for timer in timers { timer.cancel() }
                let afterCancel = loop.scheduledTimerCount
                // Arm-and-cancel as a connection does on every frame: the heap must not grow.
                for _ in 0..<100_000 { loop.schedule(at: far) {}.cancel() }
                return (armed, afterCancel, loop.scheduledTimerCount)
            }
            #expect(counts.0 == 100_000)
            #expect(counts.1 == 0)
            #expect(counts.2 == 0)
        }
    }

    @Test func timersThatStayFireInDeadlineOrderAndCancelledOnesNever() async throws {
        try await withLoop { loop in
            let fired = Locked<[Int]>([])
            let afterAll = OneShot<Bool>()
            let expected = try await loop.submit { () -> [Int] in
                var generator = SystemRandomNumberGenerator()
                let start = Deadline.now() + .milliseconds(50)
                // Due after every other timer, so it fires after any of them could have.
                _ = loop.schedule(at: start + .milliseconds(200)) { afterAll.resume(true) }
                var kept: [(offset: Int, index: Int)] = []
                for index in 0..<2_000 {
                    let offset = Int.random(in: 0..<200, using: &generator)
                    let timer = loop.schedule(at: start + .milliseconds(Int64(offset))) {
                        fired.withLock { $0.append(offset) }
                    }
                    if index % 3 == 0 { timer.cancel() } else { kept.append((offset, index)) }
                }
                return kept.map(\.offset).sorted()
            }
            let result = try await eventually("timers to fire") { () -> [Int]? in
                let now = fired.withLock { $0 }
                return now.count >= expected.count ? now : nil
            }
            #expect(result == expected)
            let timeout = afterDeadline { afterAll.resume(false) }
            #expect(await afterAll.value() == true)
            timeout.cancel()
            #expect(fired.withLock { $0.count } == expected.count)
            #expect(try await loop.submit { loop.scheduledTimerCount } == 0)
        }
    }

    @Test func epollRefusingADescriptorIsReturnedAsAnError() async throws {
        try await withLoop { loop in
            // epoll cannot watch a regular file (EPERM).
            let fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC)
            defer { close(fd) }
            let error = try await loop.submit { () -> TransportError? in
                do throws(TransportError) {
                    try loop.register(fd, events: .readable, handler: NullHandler())
                    return nil
                } catch {
                    return error
                }
            }
            #expect(error?.kind == .poller)
            #expect(error?.message.contains("epoll_ctl(ADD)") == true, "\(String(describing: error))")
        }
    }

    @Test func epollRemovalFailureIsReportedToTheLoopsErrorHook() async throws {
        let reported = Locked<[TransportError]>([])
        try await withLoop(onError: { error in reported.withLock { $0.append(error) } }) { loop in
            var pipeFDs: [Int32] = [0, 0]
            #expect(pipe(&pipeFDs) == 0)
            defer { close(pipeFDs[1]) }
            let readFD = pipeFDs[0]
            try await loop.submit { () -> Void in
                try? loop.register(readFD, events: .readable, handler: NullHandler())
                close(readFD)  // closed before it was unregistered: the removal fails with EBADF
                loop.unregister(readFD)
            }
            let errors = reported.withLock { $0 }
            #expect(errors.count == 1)
            #expect(errors.first?.kind == .poller)
            #expect(errors.first?.message.contains("epoll_ctl(DEL)") == true, "\(errors)")
        }
    }

    @Test func stoppingALoopTellsEveryRegisteredHandler() async throws {
        let loop = try EventLoop.start(name: "test-loop")
        let handler = NullHandler()
        var pipeFDs: [Int32] = [0, 0]
        #expect(pipe(&pipeFDs) == 0)
        defer {
            close(pipeFDs[0])
            close(pipeFDs[1])
        }
        let readFD = pipeFDs[0]
        try await loop.submit { try? loop.register(readFD, events: .readable, handler: handler) }
        loop.shutdown()
        try loop.waitUntilFinished()
        let stops = handler.stopCount.load(ordering: .relaxed)
        #expect(stops == 1)
    }
}

/// A Selectable that only counts ``loopDidStop()``.
private final class NullHandler: Selectable, Sendable {
    let stopCount = Atomic<Int>(0)
    func handle(events: PollEvents) {}
    func loopDidStop() { stopCount.wrappingAdd(1, ordering: .relaxed) }
}
