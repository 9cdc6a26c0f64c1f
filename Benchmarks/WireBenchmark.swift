import SupportWire
import SupportUtilities
import SupportRuntime
import SupportLink
import SupportSession
import SupporterCore
import DeviceNode
import SupporterNode
import SupporterREST
import SupportPostgres
import SupportVocabulary

/// The `wire` group: `SupportWire` framing speed, with no I/O (SPEC §3–§5).
enum WireBenchmark {
    static let group = BenchmarkGroup(
        name: "wire", summary: "SupportWire encode/decode: a session's signalling mix, max-size frames, allocations",
        run: run)

    /// Bytes per simulated network read.
    static let chunkSize = 1500

    /// One table row to measure: `workload` nil means the operation does not apply (printed as n/a).
    struct Row {
        let table: Int
        let name: String
        let operation: String
        let workload: Workload?
        var key: String { name + " / " + operation }
    }

    static func run(_ options: BenchmarkOptions) {
        let (titles, rows) = plan()
        if options.allocationProbe {
            for row in rows { if let workload = row.workload { Harness.printAllocationCount(key: row.key, workload) } }
            return
        }

        print("== wire: SupportWire framing (encode/decode in memory, no I/O) ==")
        print(
            "min time per run \(Format.fixed(options.minTime.seconds, 2)) s, \(options.repeats) run(s), median"
                + " reported; MB = 10^6 wire bytes (8-byte headers included)")
        let allocationCounts: [String: AllocationCounter.Count]
        var allocationNote: String
        switch AllocationCounter.probe(group: group.name) {
        case .success(let counts):
            allocationCounts = counts
            allocationNote = """
                   allocs/frame: malloc/calloc/realloc/memalign/aligned_alloc/posix_memalign calls per frame, counted
                   with glibc's mtrace() in a separate run of this executable under LD_PRELOAD=libc_malloc_debug.so.0
                   (warmed up, then a traced batch), so tracing never slows the timed runs. alloc B/frame: bytes those
                   calls requested (freed again within the batch; this is not heap growth).
                """
        case .failure(let failure):
            allocationCounts = [:]
            allocationNote = """
                   allocs/frame: n/a: counting runs this executable again under glibc's malloc tracer
                   (LD_PRELOAD=libc_malloc_debug.so.0, see AllocationCounter.swift), and that failed: \(failure.reason).
                """
        }
        allocationNote += "\n   spread: (slowest - fastest) / median of the timed runs.\n"
        print()

        var tables = titles.map(table(title:))
        for (index, _) in tables.enumerated() {
            for row in rows where row.table == index {
                guard let workload = row.workload else {
                    tables[index].addRow([row.name, row.operation] + Array(repeating: "n/a", count: 7))
                    continue
                }
                let result = Harness.measure(workload, options: options, allocations: allocationCounts[row.key])
                tables[index].addRow([
                    row.name, row.operation,
                    Format.rate(result.framesPerSecond),
                    Format.fixed(result.megabytesPerSecond, 1),
                    Format.fixed(result.nanosecondsPerFrame, 1),
                    Format.fixed(result.spreadPercent, 1) + "%",
                    result.allocationsPerFrame.map { Format.fixed($0, 2) } ?? "n/a",
                    result.allocatedBytesPerFrame.map { Format.fixed($0, 0) } ?? "n/a",
                    Format.grouped(workload.frames),
                ])
            }
            tables[index].print()
            print(notes[index] + "\n")
        }
        print(allocationNote)
    }

    static let notes = [
        "   mix: " + mixDescription,
        """
           16 KiB HELLO: the largest defined message whose payload fits the default 16,384-byte maximum (exactly
           16,384 B). 64 KiB HELLO: the largest defined message at all (a features field is at most 65,535 B), sent
           under a 1 MiB maximum. The 1 MiB frame has no message type, so SupportWire cannot encode it (hand-built
           bytes); decoding validates its header, buffers the 1 MiB and discards it.
        """,
    ]

    /// The tables' titles and every row, built the same way in the timing process and the allocation probe.
    static func plan() -> (titles: [String], rows: [Row]) {
        var rows: [Row] = []
        let defaultMax = WireLimits.defaultMaxFrameSize
        let largestMax = WireLimits.largestMaxFrameSize

        let stream = encodeAll(sessionMessages, maxPayloadLength: defaultMax)
        let mixFrames = sessionMessages.count
        let mixCase = "session mix (avg \(Format.fixed(Double(stream.count) / Double(mixFrames), 1)) B/frame)"
        rows += [
            Row(table: 0, name: mixCase, operation: "encode into reused buffer",
                workload: encodeIntoBuffer(sessionMessages, maxPayloadLength: defaultMax)),
            Row(table: 0, name: mixCase, operation: "encode, new [UInt8] per frame",
                workload: encodeFresh(sessionMessages, maxPayloadLength: defaultMax)),
            Row(table: 0, name: mixCase, operation: "decode, one batch",
                workload: decodeBatch(stream, frames: mixFrames, maxPayloadLength: defaultMax)),
            Row(table: 0, name: mixCase, operation: "decode, \(chunkSize)-B chunks",
                workload: decodeChunked(stream, frames: mixFrames, maxPayloadLength: defaultMax)),
        ]

        func messageRows(_ name: String, _ message: Message, maxPayloadLength: Int) -> [Row] {
            let frame = encodeAll([message], maxPayloadLength: maxPayloadLength)
            return [
                Row(table: 1, name: name, operation: "encode into reused buffer",
                    workload: encodeIntoBuffer([message], maxPayloadLength: maxPayloadLength)),
                Row(table: 1, name: name, operation: "decode, one batch",
                    workload: decodeBatch(frame, frames: 1, maxPayloadLength: maxPayloadLength)),
                Row(table: 1, name: name, operation: "decode, \(chunkSize)-B chunks",
                    workload: decodeChunked(frame, frames: 1, maxPayloadLength: maxPayloadLength)),
            ]
        }
        // Largest HELLO under the default 16 KiB maximum: a 64-byte node name and as many features as fit.
        let hello16 = largestHello(payloadLimit: defaultMax)
        rows += messageRows(
            "HELLO, \(Format.grouped(hello16.featureCount)) features, \(Format.grouped(hello16.payload)) B payload",
            hello16.message, maxPayloadLength: defaultMax)
        // The largest message version 1 defines at all: a features field holds at most 65 535 bytes (u16 length).
        let hello64 = largestHello(payloadLimit: largestMax)
        rows += messageRows(
            "HELLO, \(Format.grouped(hello64.featureCount)) features, \(Format.grouped(hello64.payload)) B payload",
            hello64.message, maxPayloadLength: largestMax)
        // 1 MiB: no defined message gets there, so an undefined type with the IGNORABLE flag, which the decoder
        // validates, buffers whole and discards (SPEC §3.3).
        let ignorable = ignorableFrame(payloadLength: largestMax)
        let ignorableCase = "type 0xEE IGNORABLE, \(Format.grouped(largestMax)) B payload"
        rows += [
            Row(table: 1, name: ignorableCase, operation: "encode", workload: nil),
            Row(table: 1, name: ignorableCase, operation: "decode (discard), one batch",
                workload: decodeBatch(ignorable, frames: 1, maxPayloadLength: largestMax, discarded: true)),
            Row(table: 1, name: ignorableCase, operation: "decode (discard), \(chunkSize)-B chunks",
                workload: decodeChunked(ignorable, frames: 1, maxPayloadLength: largestMax, discarded: true)),
        ]
        let titles = [
            "(a) signalling mix: one whole session, \(mixFrames) frames, \(Format.grouped(stream.count)) B",
            "(b) max-size frames",
        ]
        return (titles, rows)
    }

    // MARK: - Table

    static func table(title: String) -> TablePrinter {
        TablePrinter(
            title: title,
            columns: [
                .init(title: "case", alignment: .left),
                .init(title: "operation", alignment: .left),
                .init(title: "frames/s", alignment: .right),
                .init(title: "MB/s", alignment: .right),
                .init(title: "ns/frame", alignment: .right),
                .init(title: "spread", alignment: .right),
                .init(title: "allocs/frame", alignment: .right),
                .init(title: "alloc B/frame", alignment: .right),
                .init(title: "frames/iter", alignment: .right),
            ])
    }

    // MARK: - Workloads

    /// Encodes all `messages` into one buffer that keeps its capacity from iteration to iteration.
    static func encodeIntoBuffer(_ messages: [Message], maxPayloadLength: Int) -> Workload {
        let encoder = FrameEncoder(maxPayloadLength: maxPayloadLength)
        var buffer: [UInt8] = []
        let bytes = encodeAll(messages, maxPayloadLength: maxPayloadLength).count
        buffer.reserveCapacity(bytes)
        return Workload(frames: messages.count, bytes: bytes) {
            buffer.removeAll(keepingCapacity: true)
            for message in messages {
                do { try encoder.encode(message, into: &buffer) } catch { fatalError("encode: \(error)") }
            }
            return UInt64(buffer.count) &+ UInt64(buffer[buffer.count - 1])
        }
    }

    /// Encodes each message into a new array, as `encode(_:)` returns it.
    static func encodeFresh(_ messages: [Message], maxPayloadLength: Int) -> Workload {
        let encoder = FrameEncoder(maxPayloadLength: maxPayloadLength)
        let bytes = encodeAll(messages, maxPayloadLength: maxPayloadLength).count
        return Workload(frames: messages.count, bytes: bytes) {
            var sum: UInt64 = 0
            for message in messages {
                do {
                    let frame = try encoder.encode(message)
                    sum &+= UInt64(frame.count) &+ UInt64(frame[frame.count - 1])
                } catch { fatalError("encode: \(error)") }
            }
            return sum
        }
    }

    /// One long-lived decoder (a connection) receives `stream` in one append and decodes every frame of it.
    static func decodeBatch(
        _ stream: [UInt8], frames: Int, maxPayloadLength: Int, discarded: Bool = false
    ) -> Workload {
        var decoder = FrameDecoder(maxPayloadLength: maxPayloadLength)
        return Workload(frames: frames, bytes: stream.count) {
            decoder.append(stream)
            let sum = drain(&decoder)
            check(decoder, sum: sum, frames: frames, discarded: discarded)
            return sum.digest
        }
    }

    /// Like ``decodeBatch``, but the bytes arrive in `chunkSize`-byte reads from raw memory, as from a socket;
    /// after each read the receiver takes every complete message.
    static func decodeChunked(
        _ stream: [UInt8], frames: Int, maxPayloadLength: Int, discarded: Bool = false
    ) -> Workload {
        var decoder = FrameDecoder(maxPayloadLength: maxPayloadLength)
        return Workload(frames: frames, bytes: stream.count) {
            var sum = DecodeSum()
            stream.withUnsafeBytes { raw in
                var start = 0
                while start < raw.count {
                    let end = min(start + chunkSize, raw.count)
                    decoder.append(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
                    sum.add(drain(&decoder))
                    start = end
                }
            }
            check(decoder, sum: sum, frames: frames, discarded: discarded)
            return sum.digest
        }
    }

    struct DecodeSum {
        var messages = 0
        var digest: UInt64 = 0
        mutating func add(_ other: DecodeSum) {
            messages += other.messages
            digest = digest &* 31 &+ other.digest
        }
    }

    @inline(__always)
    static func drain(_ decoder: inout FrameDecoder) -> DecodeSum {
        var sum = DecodeSum()
        do {
            while let message = try decoder.nextMessage() {
                sum.messages += 1
                sum.digest = sum.digest &* 31 &+ digest(message)
            }
        } catch {
            fatalError("decode: \(error)")
        }
        return sum
    }

    /// The decoder must have consumed everything and produced (or discarded) the expected number of frames: a cheap
    /// check that the benchmark measures what it claims to.
    @inline(__always)
    static func check(_ decoder: FrameDecoder, sum: DecodeSum, frames: Int, discarded: Bool) {
        precondition(decoder.bufferedByteCount == 0, "decoder left \(decoder.bufferedByteCount) bytes")
        precondition(discarded ? sum.messages == 0 : sum.messages == frames, "decoded \(sum.messages) of \(frames)")
    }

    /// A value that depends on the decoded content of `message`.
    static func digest(_ message: Message) -> UInt64 {
        switch message {
        case .hello(let hello):
            UInt64(hello.features.count) &+ UInt64(hello.nodeName.utf8.count) &+ UInt64(hello.maxFrameSize)
        case .helloAck(let ack): UInt64(ack.keepaliveMilliseconds) &+ UInt64(ack.nodeName.utf8.count)
        case .ping(let ping): ping.nonce
        case .pong(let pong): pong.nonce &* 3
        case .goAway(let goAway): UInt64(goAway.reason.rawValue) &+ UInt64(goAway.text?.utf8.count ?? 0)
        case .register(let register):
            UInt64(register.apiToken.utf8.count) &+ UInt64(register.capabilities.count)
        case .registerResult(let result): UInt64(result.reason.rawValue) &+ UInt64(result.codeType?.rawValue ?? 0)
        case .connectionRequest(let request):
            UInt64(request.requestID) &+ UInt64(request.supporterName.utf8.count)
        case .connectionResponse(let response): UInt64(response.requestID) &+ UInt64(response.decision.rawValue)
        case .requestAbort(let abort): UInt64(abort.requestID)
        case .sessionStarted(let started): UInt64(started.requestID) &* 7
        case .sessionEnd(let end): UInt64(end.reason.rawValue) &+ UInt64(end.text?.utf8.count ?? 0)
        case .sessionError(let error): UInt64(error.feature?.rawValue ?? 0) &+ UInt64(error.text?.utf8.count ?? 0)
        case .voipState(let state): UInt64(state.state.rawValue)
        case .featureRequest(let request): UInt64(request.askID) &+ UInt64(request.feature.rawValue)
        case .featureAnswer(let answer): UInt64(answer.askID) &+ UInt64(answer.decision.rawValue)
        case .featureRevoke(let revoke): UInt64(revoke.feature.rawValue)
        case .sessionMessage(let message): UInt64(message.messageID) &+ UInt64(message.body.count)
        case .messageAck(let ack): UInt64(ack.messageID) &+ UInt64(ack.reason.rawValue)
        case .resume(let resume): UInt64(resume.resumeSecret.utf8.count) &+ UInt64(resume.state.rawValue)
        case .resumeResult(let result): UInt64(result.reason.rawValue) &+ UInt64(result.lastMessageID ?? 0)
        case .featureWithdraw(let withdraw): UInt64(withdraw.askID) &* 5
        }
    }

    // MARK: - Data

    static func encodeAll(_ messages: [Message], maxPayloadLength: Int) -> [UInt8] {
        let encoder = FrameEncoder(maxPayloadLength: maxPayloadLength)
        var bytes: [UInt8] = []
        for message in messages {
            do { try encoder.encode(message, into: &bytes) } catch { fatalError("encode \(message): \(error)") }
        }
        return bytes
    }

    static let pingPongPairs = 30

    static let mixDescription =
        "HELLO, HELLO_ACK, REGISTER, REGISTER_RESULT, 2 PING/PONG, CONNECTION_REQUEST, CONNECTION_RESPONSE, "
        + "SESSION_STARTED, VOIP_STATE, SESSION_ERROR, \(pingPongPairs) PING/PONG (keepalive during the session), "
        + "SESSION_END, GOAWAY; both directions in one stream."

    /// One session, as both directions of one connection would carry it.
    static let sessionMessages: [Message] = {
        var messages: [Message] = [
            .hello(
                Hello(
                    role: .device, nodeName: "Galaxy S24 (Maria's phone)", features: [],
                    keepaliveMilliseconds: 15_000, maxFrameSize: 65_536)),
            .helloAck(
                HelloAck(
                    role: .supporter, nodeName: "support-eu-west-1.example.net", features: [],
                    keepaliveMilliseconds: 20_000, maxFrameSize: 16_384)),
            .register(
                Register(
                    sessionCode: "482-913-775",
                    apiToken: "rsk_live_7f3a9c2e41b84d06a5e1c9d2b7f04e6a8c3d1f5b9e2a7c4d",
                    capabilities: [Feature(.screenShare), Feature(.assistAR), Feature(.voip)])),
            .registerResult(RegisterResult(reason: .success, codeType: .remoteSupport)),
        ]
        var nonce: UInt64 = 0x5EED_0000_0000_0000
        func keepalive(_ pairs: Int) {
            for _ in 0..<pairs {
                nonce &+= 0x9E37_79B9_7F4A_7C15
                messages.append(.ping(Ping(nonce: nonce)))
                messages.append(.pong(Pong(nonce: nonce)))
            }
        }
        keepalive(2)
        messages += [
            .connectionRequest(
                ConnectionRequest(
                    requestID: 1, supporterName: "Jonas Becker (Tier 2 Support)", connectionType: .screenShare,
                    requestedFeatures: [Feature(.screenShare), Feature(.voip), Feature(.remoteControl)])),
            .connectionResponse(ConnectionResponse(requestID: 1, decision: .allow)),
            .sessionStarted(SessionStarted(requestID: 1)),
            .voipState(VoIPState(state: .started)),
            .sessionError(
                SessionError(
                    reason: .unsupportedFeature, feature: .remoteControl,
                    text: "remote_control is not available on this device")),
        ]
        keepalive(pingPongPairs)
        messages += [
            .sessionEnd(SessionEnd(reason: .endedBySupporter, text: "issue resolved")),
            .goAway(GoAway(reason: .normalClose, text: "bye")),
        ]
        return messages
    }()

    /// The HELLO with a 64-byte node name and as many features as fit both `payloadLimit` and the features field's
    /// u16 length.
    static func largestHello(payloadLimit: Int) -> (message: Message, featureCount: Int, payload: Int) {
        func hello(_ featureCount: Int) -> Message {
            .hello(
                Hello(
                    role: .device, nodeName: String(repeating: "N", count: WireLimits.nameLength),
                    features: FeatureSet((0..<featureCount).map { Feature(.init(rawValue: UInt16($0 + 1))) }),
                    maxFrameSize: UInt32(WireLimits.largestMaxFrameSize)))
        }
        let basePayload = encodeAll([hello(0)], maxPayloadLength: payloadLimit).count - 8
        let featureCount = min((payloadLimit - basePayload) / 4, Int(UInt16.max) / 4)
        let message = hello(featureCount)
        let payload = encodeAll([message], maxPayloadLength: payloadLimit).count - 8
        // One more feature must not fit: this really is the largest.
        do {
            _ = try FrameEncoder(maxPayloadLength: payloadLimit).encode(hello(featureCount + 1))
            fatalError("a HELLO with \(featureCount + 1) features still encodes")
        } catch {}
        return (message, featureCount, payload)
    }

    /// A hand-built frame of undefined type 0xEE with the IGNORABLE flag (SPEC §3.3).
    static func ignorableFrame(payloadLength: Int) -> [UInt8] {
        var bytes: [UInt8] = [
            FrameHeader.version, 0xEE, FrameHeader.ignorableFlag, 0,
            UInt8(truncatingIfNeeded: payloadLength >> 24), UInt8(truncatingIfNeeded: payloadLength >> 16),
            UInt8(truncatingIfNeeded: payloadLength >> 8), UInt8(truncatingIfNeeded: payloadLength),
        ]
        bytes.reserveCapacity(8 + payloadLength)
        for index in 0..<payloadLength { bytes.append(UInt8(truncatingIfNeeded: index &* 131)) }
        return bytes
    }
}
