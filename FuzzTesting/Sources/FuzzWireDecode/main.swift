import FuzzCommon

/// Arbitrary bytes as a received stream: FrameDecoder in an input-derived chunking, byte at a time (short inputs),
/// whole buffer and decodeAll must never trap and must all give the same messages or the same error (code, offset,
/// field). Any thrown WireError is fine.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let whole = decodeWhole(bytes)
    checkDecodeAll(bytes, whole: whole, maxPayloadLength: 16_384)
    checkChunkings(bytes, whole: whole, maxPayloadLength: 16_384)
    return 0
}
