// The session machines speak in SupportWire's types; re-export them so node code needs one import.
@_exported import SupportWire
// Time in the machines is the monotonic clock's `Deadline` (SupportUtilities, no I/O): the same type as the link machine's.
@_exported import SupportUtilities
