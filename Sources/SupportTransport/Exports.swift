// SupportTransport is the umbrella of the transport layers, for code that wants all of them with one import:
// SupportUtilities (no I/O: Base64, Hex, SHA-256, the monotonic clock), SupportRuntime (the I/O runtime: event loop,
// sockets, TLS on OpenSSL) and SupportLink (the link state machine, the framed link and the dialer). Code that needs
// less imports less; the layers themselves import only what is below them.
@_exported public import SupportLink
@_exported public import SupportRuntime
@_exported public import SupportUtilities
