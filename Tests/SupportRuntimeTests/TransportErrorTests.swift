import SupportWire
import Testing
@testable import SupportRuntime

@Suite struct TransportErrorTests {
    struct Cause: Error, Sendable {}

    /// Logs and tests print kinds by these names: the move to a private enum must not change one.
    @Test(arguments: [
        (TransportError.Kind.fileUnreadable, "file_unreadable"), (.invalidPEM, "invalid_pem"),
        (.keyMismatch, "key_mismatch"), (.invalidPin, "invalid_pin"), (.invalidConfiguration, "invalid_configuration"),
        (.addressInUse, "address_in_use"), (.connectionRefused, "connection_refused"),
        (.hostUnreachable, "host_unreachable"), (.nameResolution, "name_resolution"), (.resolverBusy, "resolver_busy"),
        (.socket, "socket"), (.handshakeFailed, "handshake_failed"),
        (.certificateVerification, "certificate_verification"), (.pinMismatch, "pin_mismatch"),
        (.alpnMismatch, "alpn_mismatch"), (.tls, "tls"), (.connectTimeout, "connect_timeout"),
        (.handshakeTimeout, "handshake_timeout"), (.idleTimeout, "idle_timeout"),
        (.deadlineExceeded, "deadline_exceeded"),
        (.uncleanShutdown, "unclean_shutdown"), (.connectionReset, "connection_reset"),
        (.writeBufferFull, "write_buffer_full"), (.closed, "closed"), (.protocolViolation, "protocol_violation"),
        (.cancelled, "cancelled"), (.eventLoopShutDown, "event_loop_shut_down"),
        (.blockingOnEventLoop, "blocking_on_event_loop"), (.poller, "poller"),
    ])
    func everyKindKeepsItsName(_ kind: TransportError.Kind, _ name: String) {
        #expect(kind.name == name)
        #expect(kind.description == name)
    }

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = TransportError(.closed, "the link is closed", underlying: Cause())
        let two = TransportError(.closed, "the link is closed")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one.underlying is Cause)
        #expect(TransportError(.closed, "a").kind == TransportError(.closed, "b").kind)
        #expect(TransportError(.closed, "a") != TransportError(.closed, "b"))
        #expect(TransportError(.closed, "a") != TransportError(.cancelled, "a"))
        #expect(TransportError(.tls, "a", openSSLReason: "x") != TransportError(.tls, "a"))
    }

    @Test func descriptionAddsOpenSSLsReasonOnce() {
        #expect(TransportError(.tls, "handshake failed", openSSLReason: "bad cert").description
            == "handshake failed (OpenSSL: bad cert)")
        #expect(TransportError(.tls, "handshake failed: bad cert", openSSLReason: "bad cert").description
            == "handshake failed: bad cert")
        #expect(TransportError(.closed, "the link is closed").description == "the link is closed")
    }
}
