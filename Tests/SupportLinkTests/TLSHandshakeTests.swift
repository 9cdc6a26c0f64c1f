import Foundation
import Testing
import SupportWire
import TestSupport
@testable import SupportLink
@testable import SupportRuntime
import SupportUtilities

extension TransportIntegration {
    /// Who is trusted: CA, host name, expiry, pins, client certificates, TLS versions, ALPN.
    @Suite struct TLSHandshakeTests {
        @Test func caSignedServerIsAcceptedByName() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (link, recorder) = try await fixture.dial(server, host: "localhost")
                #expect(recorder.parameters != nil)
                #expect(!link.isClosed)
            }
        }

        @Test func caSignedServerIsAcceptedByIPAddress() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let (_, recorder) = try await fixture.dial(server, host: "127.0.0.1")
                #expect(recorder.parameters != nil)
            }
        }

        @Test func serverFromAnUntrustedCAFailsVerificationWithOpenSSLsReason() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(context: fixture.serverContext(fixture.certificates.serverOtherCA))
                let error = await fixture.dialExpectingFailure(server, context: try fixture.clientContext())
                #expect(error?.kind == .certificateVerification)
                #expect(error?.message.contains("unable to get local issuer certificate") == true, "\(String(describing: error))")
                // The server learns the client refused it, and keeps its loop healthy.
                let (_, serverRecorder) = try await server.link()
                #expect(try await serverRecorder.waitForClose().transportError != nil)
                #expect(serverRecorder.parameters == nil)
            }
        }

        /// Our own listener refuses to serve an expired certificate (TLSContextTests), so openssl s_server serves it.
        @Test func expiredServerCertificateFailsVerification() async throws {
            try await withTransport { fixture in
                let server = try await OpenSSLServer(certificate: fixture.certificates.serverExpired)
                var failure: TransportError?
                let context = try fixture.clientContext()
                do throws(TransportError) {
                    _ = try await TLSDialer.connect(
                        host: "localhost", port: server.port, context: context, settings: .device(),
                        loop: fixture.clientLoop, delegate: nil)
                } catch {
                    failure = error
                }
                await server.kill()
                let error = failure
                #expect(error?.kind == .certificateVerification)
                #expect(error?.message.contains("certificate has expired") == true, "\(String(describing: error))")
            }
        }

        @Test(arguments: ["localhost", "127.0.0.1"])
        func serverCertificateForAnotherHostFailsVerification(host: String) async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(
                    context: fixture.serverContext(fixture.certificates.serverWrongHost))
                let error = await fixture.dialExpectingFailure(server, host: host, context: try fixture.clientContext())
                #expect(error?.kind == .certificateVerification)
                let mismatch = host == "localhost" ? "hostname mismatch" : "IP address mismatch"
                #expect(error?.message.contains(mismatch) == true, "\(String(describing: error))")
            }
        }

        @Test func configuredServerNameOverridesTheDialedHost() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(
                    context: fixture.serverContext(fixture.certificates.serverWrongHost))
                let context = try fixture.clientContext { $0.serverName = "wrong.example" }
                let (_, recorder) = try await fixture.dial(server, host: "127.0.0.1", context: context)
                #expect(recorder.parameters != nil)
            }
        }

        @Test func clientWithoutTrustRootsRejectsTheTestCA() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                // The system's default CA paths do not hold the test CA.
                let context = try TLSContext(.makeClientConfiguration())
                let error = await fixture.dialExpectingFailure(server, context: context)
                #expect(error?.kind == .certificateVerification)
            }
        }

        @Test func pinnedSelfSignedServerIsAccepted() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(context: fixture.serverContext(fixture.certificates.selfSigned))
                let pin = try PublicKeyPin(digest: fixture.certificates.selfSigned.spkiSHA256)
                let context = try TLSContext(.makeClientConfiguration(pinnedPublicKeys: [pin]))
                let (_, recorder) = try await fixture.dial(server, context: context)
                #expect(recorder.parameters != nil)
            }
        }

        @Test func pinnedKeyIsTheIdentityEvenUnderAnotherName() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(
                    context: fixture.serverContext(fixture.certificates.serverWrongHost))
                let pin = try PublicKeyPin(digest: fixture.certificates.serverWrongHost.spkiSHA256)
                let context = try TLSContext(.makeClientConfiguration(pinnedPublicKeys: [pin]))
                let (_, recorder) = try await fixture.dial(server, host: "localhost", context: context)
                #expect(recorder.parameters != nil)
            }
        }

        @Test func serverKeyMatchingNoPinIsPinMismatch() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(context: fixture.serverContext(fixture.certificates.selfSigned))
                // A CA-signed key is not enough when pins are set: only the pinned key is accepted.
                let pin = try PublicKeyPin(digest: fixture.certificates.server.spkiSHA256)
                let context = try TLSContext(
                    .makeClientConfiguration(trustRoots: .file(fixture.certificates.caPath), pinnedPublicKeys: [pin]))
                let error = await fixture.dialExpectingFailure(server, context: context)
                #expect(error?.kind == .pinMismatch, "\(String(describing: error))")
            }
        }

        // The combination rules (docs/security.md, "Trusting the node"): a pin never waives the CA or the validity window.

        @Test func aPinAloneStillRefusesAnExpiredCertificate() async throws {
            try await withTransport { fixture in
                // Our listener refuses to serve an expired certificate, so openssl s_server serves it.
                let server = try await OpenSSLServer(certificate: fixture.certificates.serverExpired)
                let pin = try PublicKeyPin(digest: fixture.certificates.serverExpired.spkiSHA256)
                let context = try TLSContext(.makeClientConfiguration(pinnedPublicKeys: [pin]))
                var failure: TransportError?
                do throws(TransportError) {
                    _ = try await TLSDialer.connect(
                        host: "localhost", port: server.port, context: context, settings: .device(),
                        loop: fixture.clientLoop, delegate: nil)
                } catch {
                    failure = error
                }
                await server.kill()
                #expect(failure?.kind == .certificateVerification, "\(String(describing: failure))")
                #expect(failure?.message.contains("expired") == true, "\(String(describing: failure))")
            }
        }

        @Test func aRightPinWithAWrongCAIsRefused() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let pin = try PublicKeyPin(digest: fixture.certificates.server.spkiSHA256)
                let context = try TLSContext(
                    .makeClientConfiguration(
                        trustRoots: .file(fixture.certificates.otherCAPath), pinnedPublicKeys: [pin]))
                let error = await fixture.dialExpectingFailure(server, context: context)
                #expect(error?.kind == .certificateVerification, "\(String(describing: error))")
            }
        }

        @Test func aRightPinAndTheRightCAAreBothSatisfied() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let pin = try PublicKeyPin(digest: fixture.certificates.server.spkiSHA256)
                let context = try TLSContext(
                    .makeClientConfiguration(trustRoots: .file(fixture.certificates.caPath), pinnedPublicKeys: [pin]))
                let (_, recorder) = try await fixture.dial(server, context: context)
                #expect(recorder.parameters != nil)
            }
        }

        @Test func withACAThePinnedKeyMustStillCarryTheHostName() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(
                    context: fixture.serverContext(fixture.certificates.serverWrongHost))
                let pin = try PublicKeyPin(digest: fixture.certificates.serverWrongHost.spkiSHA256)
                let context = try TLSContext(
                    .makeClientConfiguration(trustRoots: .file(fixture.certificates.caPath), pinnedPublicKeys: [pin]))
                let error = await fixture.dialExpectingFailure(server, host: "localhost", context: context)
                #expect(error?.kind == .certificateVerification, "\(String(describing: error))")
            }
        }

        @Test func serverRequiringAClientCertificateRefusesAClientWithout() async throws {
            try await withTransport { fixture in
                let context = try fixture.serverContext {
                    $0.clientCertificateRequirement = .required
                    $0.trustRoots = .file(fixture.certificates.caPath)
                }
                let server = try fixture.startServer(context: context)
                // TLS 1.3: the client's handshake completes before the server checks its certificate, so the client
                // learns of the refusal only while it waits for HELLO_ACK: from the server's alert, or, when its
                // HELLO reached the server after the server closed, from the RST that discards that alert.
                let error = await fixture.dialExpectingFailure(server, context: try fixture.clientContext())
                let description = error?.description ?? "no error"
                #expect(
                    description.contains("certificate required") || error?.kind == .connectionReset, "\(description)")
                let (_, serverRecorder) = try await server.link()
                let serverError = try await serverRecorder.waitForClose().transportError
                #expect(serverError?.kind == .handshakeFailed || serverError?.kind == .certificateVerification)
                #expect(serverRecorder.parameters == nil)
            }
        }

        @Test func serverRequiringAClientCertificateAcceptsACASignedOne() async throws {
            try await withTransport { fixture in
                let context = try fixture.serverContext {
                    $0.clientCertificateRequirement = .required
                    $0.trustRoots = .file(fixture.certificates.caPath)
                }
                let server = try fixture.startServer(context: context)
                let clientContext = try fixture.clientContext {
                    $0.certificateChain = .file(fixture.certificates.client.certificatePath)
                    $0.privateKey = .file(fixture.certificates.client.keyPath)
                }
                let (_, recorder) = try await fixture.dial(server, context: clientContext)
                #expect(recorder.parameters != nil)
                let (_, serverRecorder) = try await server.link()
                #expect(try await serverRecorder.waitForOpen().peerName == "test-device")
            }
        }

        @Test func serverRequiringAClientCertificateRefusesOneFromAnotherCA() async throws {
            try await withTransport { fixture in
                let context = try fixture.serverContext {
                    $0.clientCertificateRequirement = .required
                    $0.trustRoots = .file(fixture.certificates.otherCAPath)
                }
                let server = try fixture.startServer(context: context)
                let clientContext = try fixture.clientContext {
                    $0.certificateChain = .file(fixture.certificates.client.certificatePath)
                    $0.privateKey = .file(fixture.certificates.client.keyPath)
                }
                let error = await fixture.dialExpectingFailure(server, context: clientContext)
                #expect(error != nil)
                let (_, serverRecorder) = try await server.link()
                #expect(try await serverRecorder.waitForClose().transportError?.kind == .certificateVerification)
            }
        }

        /// Our configuration only sets a minimum version; a client that offers TLS 1.2 only is `openssl s_client`.
        @Test func tls12OnlyClientIsRefusedByTheDefaultServer() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let client = try OpenSSLClient(port: server.port, arguments: ["-tls1_2", "-alpn", "rsup/1"])
                let status = try await client.waitForExit(timeout: .seconds(20))
                await client.kill()
                #expect(status != 0)
                let (_, serverRecorder) = try await server.link()
                let error = try await serverRecorder.waitForClose().transportError
                #expect(error?.kind == .handshakeFailed)
                #expect(error?.description.contains("unsupported protocol") == true, "\(String(describing: error))")
            }
        }

        @Test func tls12OnlyClientIsAcceptedWhenTheServerAllowsTLS12() async throws {
            try await withTransport { fixture in
                let context = try fixture.serverContext { $0.minimumVersion = .tls12 }
                var settings = LinkSettings.supporter()
                settings.helloTimeout = .milliseconds(500)
                let server = try fixture.startServer(context: context, settings: settings)
                let client = try OpenSSLClient(port: server.port, arguments: ["-tls1_2", "-alpn", "rsup/1"])
                let (_, serverRecorder) = try await server.link()
                // TLS came up: the server then waited for a HELLO that s_client never sends.
                #expect(try await serverRecorder.waitForClose() == .helloTimeout)
                await client.kill()
            }
        }

        @Test func clientNotOfferingOurALPNIsRefused() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer()
                let client = try OpenSSLClient(port: server.port, arguments: ["-alpn", "http/1.1"])
                let (_, serverRecorder) = try await server.link()
                let error = try await serverRecorder.waitForClose().transportError
                #expect(error?.kind == .handshakeFailed)
                #expect(serverRecorder.parameters == nil)
                await client.kill()
            }
        }

        @Test func serverNotSelectingOurALPNIsRefusedByTheClient() async throws {
            try await withTransport { fixture in
                let server = try fixture.startServer(
                    context: fixture.serverContext { $0.applicationProtocol = "rsup/2" })
                let context = try fixture.clientContext()
                let error = await fixture.dialExpectingFailure(server, context: context)
                #expect(error != nil)
                #expect(error?.kind == .handshakeFailed || error?.kind == .alpnMismatch, "\(String(describing: error))")
            }
        }

        @Test func listenerRefusesAClientContextAndDialerAServerContext() async throws {
            try await withTransport { fixture in
                let client = try fixture.clientContext()
                #expect {
                    _ = try TLSListener(
                        host: "127.0.0.1", port: 0, context: client, settings: .supporter(),
                        group: fixture.serverGroup
                    ) { _ in true }
                } throws: { ($0 as? TransportError)?.kind == .invalidConfiguration }
                let server = try fixture.serverContext()
                await #expect {
                    _ = try await TLSDialer.connect(
                        host: "127.0.0.1", port: 1, context: server, settings: .device(), loop: fixture.clientLoop,
                        delegate: nil)
                } throws: { ($0 as? TransportError)?.kind == .invalidConfiguration }
            }
        }

        @Test func dialingAClosedPortIsConnectionRefused() async throws {
            try await withTransport { fixture in
                // Bind and close a listener to find a port nobody listens on.
                let server = try fixture.startServer()
                let port = server.port
                server.listener.close()
                _ = await onLoop(fixture.serverGroup.loops[0]) { () }
                await #expect {
                    _ = try await TLSDialer.connect(
                        host: "127.0.0.1", port: port, context: try fixture.clientContext(), settings: .device(),
                        loop: fixture.clientLoop, delegate: nil)
                } throws: { ($0 as? TransportError)?.kind == .connectionRefused }
            }
        }
    }
}
