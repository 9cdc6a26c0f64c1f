import FuzzCommon

/// Every message decoded from arbitrary bytes (with the default 16 KiB maximum, and again with 1 MiB for inputs
/// longer than 16 KiB) must encode without throwing, within the payload length it was received with, decode back to
/// an equal message, and re-encode to the same canonical bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    checkRoundTrip(bytes, maxPayloadLength: 16_384)
    if count > 16_384 + 8 { checkRoundTrip(bytes, maxPayloadLength: 1_048_576) }
    return 0
}
