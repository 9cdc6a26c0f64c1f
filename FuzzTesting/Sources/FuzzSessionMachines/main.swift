import SessionFuzzing

/// Arbitrary bytes as a sequence of local events and received frames, driving a device session machine and a
/// supporter session machine (SPEC §8, §9); every invariant of SessionFuzzing.SessionDriver must hold.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    SessionDriver.run(UnsafeRawBufferPointer(start: start, count: count))
    return 0
}
