import Glibc
import Testing
import TestSupport

/// The test harness's child processes keep only standard input, output and error: a socket a test opened without
/// close-on-exec must not live on in a program another suite starts meanwhile (the hostile-peer test once saw its
/// "vanished" peer stay connected for 10 s because a concurrently spawned node held the descriptor).
@Suite struct ChildProcessTests {
    @Test func aChildInheritsNoDescriptorBeyondTheStandardThree() throws {
        let inheritable = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(inheritable > 2)
        defer { close(inheritable) }
        let child = try ChildProcess("/bin/sh", ["-c", "ls /proc/$$/fd"], stdout: .pipe)
        let listing = String(decoding: ChildProcess.readAll(child.stdoutFD), as: UTF8.self)
        close(child.stdoutFD)
        #expect(child.waitForExit() == 0)
        let descriptors = Set(listing.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) })
        #expect(descriptors.isSuperset(of: [0, 1, 2]), "\(listing)")
        #expect(!descriptors.contains(inheritable), "the child holds the test's socket: \(descriptors.sorted())")
    }
}
