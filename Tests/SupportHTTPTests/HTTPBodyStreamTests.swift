import Foundation
import Synchronization
import Testing
import TestSupport
@testable import SupportHTTP
import SupportRuntime

@Suite("HTTP body stream")
struct HTTPBodyStreamTests {
    @Test("sends before the connection attaches wait, in order; past the capacity the stream closes")
    func bound() {
        let stream = HTTPBodyStream(capacity: 10)
        #expect(stream.send(Array("abc".utf8)))
        #expect(stream.send(Array("defg".utf8)))
        final class Seen: Sendable { let pieces = Mutex<[String]>([]) }
        let seen = Seen()
        stream.attach { piece in
            if case .bytes(let bytes) = piece { seen.pieces.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
        }
        #expect(seen.pieces.withLock { $0 } == ["abc", "defg"])
        stream.written(7)
        #expect(stream.send(Array("0123456789".utf8)))
        #expect(!stream.send(Array("x".utf8)), "a client 10 bytes behind took one more")
        #expect(stream.isClosed)
    }

    @Test("a stream dropped before its connection is ready closes that connection at once when it attaches")
    func droppedBeforeAttach() {
        let stream = HTTPBodyStream(capacity: 4)
        #expect(!stream.send(Array("too long".utf8)))
        final class Seen: Sendable { let drops = Mutex(0) }
        let seen = Seen()
        stream.attach { piece in
            if case .drop = piece { seen.drops.withLock { $0 += 1 } }
        }
        #expect(seen.drops.withLock { $0 } == 1)
    }
}

extension HTTPIntegration {
    @Suite("streamed answers (Server-Sent Events)")
    struct StreamedAnswerTests {
        @Test("a streamed body arrives piece by piece without Content-Length and ends when the stream finishes")
        func streams() async throws {
            try await withServer(handler: { _ in
                let stream = HTTPBodyStream()
                Task {
                    for index in 0..<3 {
                        stream.send(Array("data: \(index)\n\n".utf8))
                        await Task.yield()  // pieces sent one by one, as events come; no pacing needed to prove it
                    }
                    stream.finish()
                }
                return HTTPResponse(status: .ok, headers: ["Content-Type": "text/event-stream"], stream: stream)
            }) { fixture in
                let result = try await curl(fixture, ["-N", "-i", fixture.url("/events")])
                #expect(result.status == 0, "\(result)")
                #expect(result.stdout.contains("data: 0\n\ndata: 1\n\ndata: 2\n\n"), "\(result)")
                #expect(!result.stdout.lowercased().contains("content-length"), "\(result)")
                #expect(result.stdout.lowercased().contains("connection: close"), "\(result)")
            }
        }

        @Test("a client that stops reading is dropped once it is a capacity behind; nothing is buffered without end")
        func slowClientIsDropped() async throws {
            final class Outcome: Sendable {
                let state = Mutex<(sent: Int, refused: Bool)>((0, false))
            }
            let box = Outcome()
            try await withServer(handler: { _ in
                let stream = HTTPBodyStream(capacity: 64 << 10)
                // A thread of its own, not a task: the suite's other tests may keep the cooperative pool's few
                // threads busy for seconds on a loaded machine, which would starve the sender, not test the server.
                Thread {
                    let chunk = [UInt8](repeating: 0x61, count: 16 << 10)
                    // As fast as it goes, up to far more than the socket buffers and the stream's capacity together.
                    for _ in 0..<16_384 {
                        guard stream.send(chunk) else {
                            box.state.withLock { $0.refused = true }
                            return
                        }
                        box.state.withLock { $0.sent += chunk.count }
                    }
                }.start()
                return HTTPResponse(status: .ok, headers: ["Content-Type": "text/event-stream"], stream: stream)
            }) { fixture in
                // A client that sends the request and then never reads, until the test lets it go.
                let client = try PythonClient(
                    fixture,
                    """
                    s = tls()
                    s.sendall(b"GET /events HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
                    wait_go()
                    print(json.dumps({"ok": True}))
                    """)
                try await client.waitReady()
                // Dropped by the server while the client still holds its socket open.
                try await eventually("the server drops the stalled client") { box.state.withLock { $0.refused } }
                try await eventually("the connection closes") { fixture.server.connectionCount == 0 }
                #expect(box.state.withLock { $0.sent } < 64 << 20, "the server kept sending into a client that reads nothing")
                client.go()
                _ = try await client.result()
            }
        }
    }
}

extension HTTPIntegration {
    @Suite("headers on the server's own answers")
    struct ServerAnswerHeaderTests {
        @Test("a malformed request's 400 carries the configured headers too")
        func malformed() async throws {
            try await withServer(configure: { $0.headersOnEveryAnswer = ["X-Frame-Options": "DENY"] }) { fixture in
                let result = try await python(
                    fixture,
                    """
                    s = tls()
                    s.sendall(b"GARBAGE\\r\\n\\r\\n")
                    text = read_all(s)
                    print(json.dumps({"head": text.split("\\r\\n\\r\\n")[0]}))
                    """)
                let head = result["head"] as? String ?? ""
                #expect(head.hasPrefix("HTTP/1.1 400"), "\(head)")
                #expect(head.contains("X-Frame-Options: DENY"), "\(head)")
            }
        }
    }
}
