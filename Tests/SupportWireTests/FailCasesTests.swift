// Every input under FuzzTesting/FailCases/ (crashes the fuzz targets ever found, and hand-made hostile streams) is a
// regression test: decoding it must not trap, must give the same result in every chunking, and every message it
// decodes to must survive an encode/decode round trip unchanged. See FuzzTesting/README.md.
import Foundation
import Testing

@testable import SupportWire
import TestSupport
import SupportVocabulary

enum FailCases {
    /// FuzzTesting/FailCases/, found from this file's path: Tests/SupportWireTests/ → package root.
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FuzzTesting/FailCases", isDirectory: true)

    /// Every input file, as a path relative to `folder` (READMEs, scripts and dot files are not inputs).
    static let all: [String] = {
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])
        else { return [] }
        var names: [String] = []
        for case let url as URL in walker {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
            let name = url.lastPathComponent
            if name.hasPrefix(".") || name.hasPrefix("README") || name.hasSuffix(".py") || name.hasSuffix(".md") {
                continue
            }
            names.append(String(url.path.dropFirst(folder.path.count + 1)))
        }
        return names.sorted()
    }()

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
    }
}

/// The messages of a complete stream and the error it ended with, if any.
private struct Outcome: CustomStringConvertible {
    var messages: [Message] = []
    var error: WireError?
    var discarded = 0

    /// Errors are compared by what the spec says they are (code, offset, field), not by their human detail.
    func matches(_ other: Outcome) -> Bool {
        messages == other.messages && discarded == other.discarded && error?.code == other.error?.code
            && error?.offset == other.error?.offset && error?.field == other.error?.field
    }

    var description: String { "\(messages.count) message(s), \(discarded) discarded, \(error.map { "\($0)" } ?? "ok")" }
}

/// Feeds `bytes` in chunks of `chunk` bytes (the last may be shorter), draining after each, then ends the stream.
private func decode(_ bytes: [UInt8], chunk: Int, maxPayloadLength: Int = WireLimits.defaultMaxFrameSize) -> Outcome {
    var decoder = FrameDecoder(maxPayloadLength: maxPayloadLength)
    var outcome = Outcome()
    var position = 0
    do throws(WireError) {
        while position < bytes.count {
            let end = min(bytes.count, position + chunk)
            decoder.append(bytes[position..<end])
            position = end
            while let message = try decoder.nextMessage() { outcome.messages.append(message) }
            #expect(decoder.bufferedByteCount < FrameHeader.size + maxPayloadLength)
            #expect(decoder.consumedByteCount + decoder.bufferedByteCount == position)
        }
        try decoder.finish()
    } catch {
        outcome.error = error
        #expect(error.offset >= 0 && error.offset < bytes.count, "error offset outside the stream: \(error)")
    }
    outcome.discarded = decoder.discardedFrameCount
    return outcome
}

@Suite("FuzzTesting/FailCases regressions")
struct FailCasesTests {
    @Test("the FailCases folder is found")
    func folderExists() {
        var isFolder: ObjCBool = false
        #expect(
            FileManager.default.fileExists(atPath: FailCases.folder.path, isDirectory: &isFolder) && isFolder.boolValue,
            "no folder at \(FailCases.folder.path)")
    }

    @Test("decoding gives the same result in every chunking", arguments: FailCases.all)
    func chunkingsAgree(_ name: String) throws {
        let bytes = try FailCases.bytes(name)
        let whole = decode(bytes, chunk: max(1, bytes.count))
        var chunkSizes = [2, 3, 7, 8, 9, 64, 4096]
        if bytes.count <= 20_000 { chunkSizes.append(1) }
        for size in chunkSizes {
            let chunked = decode(bytes, chunk: size)
            #expect(chunked.matches(whole), "\(name): chunks of \(size) gave \(chunked); whole: \(whole)")
        }
        do {
            let all = try FrameDecoder.decodeAll(bytes)
            #expect(whole.error == nil && all == whole.messages, "\(name): decodeAll gave \(all.count); \(whole)")
        } catch {
            #expect(
                whole.error?.code == error.code && whole.error?.offset == error.offset
                    && whole.error?.field == error.field, "\(name): decodeAll threw \(error); \(whole)")
        }
    }

    @Test("every decoded message round-trips", arguments: FailCases.all)
    func roundTrip(_ name: String) throws {
        let bytes = try FailCases.bytes(name)
        for maxPayload in [WireLimits.defaultMaxFrameSize, WireLimits.largestMaxFrameSize] {
            let decoded = decode(bytes, chunk: max(1, bytes.count), maxPayloadLength: maxPayload)
            for message in decoded.messages {
                // A message that decoded never fails to encode, within the limit it was received with.
                let encoded = try FrameEncoder(maxPayloadLength: maxPayload).encode(message)
                let again = try FrameDecoder.decodeAll(encoded, maxPayloadLength: WireLimits.largestMaxFrameSize)
                #expect(again == [message], "\(name): \(message) came back as \(again)")
                if let first = again.first {
                    #expect(
                        try FrameEncoder(maxPayloadLength: maxPayload).encode(first) == encoded,
                        "\(name): re-encoding \(message) changed its bytes")
                }
            }
        }
    }
}
