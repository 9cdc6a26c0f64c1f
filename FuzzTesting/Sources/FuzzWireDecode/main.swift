import FuzzCommon

/// Arbitrary bytes as a received stream: FrameDecoder fed the whole buffer, in an input-derived chunking, and split
/// at every frame edge, and decodeAll, must never trap and must all give the same messages or the same error (code,
/// offset, field); for half the inputs the frame-edge decode uses a smaller maximum (one of the stream's own payload
/// lengths, or one less) and must agree up to the first frame over it, then fail with `frame_too_large` there. Any
/// thrown WireError is fine.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let whole = decodeWhole(bytes)
    checkDecodeAll(bytes, whole: whole, maxPayloadLength: 16_384)
    checkChunkings(bytes, whole: whole, maxPayloadLength: 16_384)
    checkFrameEdges(bytes, whole: whole, maxPayloadLength: 16_384)
    return 0
}
