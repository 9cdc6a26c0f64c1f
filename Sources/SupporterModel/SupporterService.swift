public import Foundation
public import SupportUtilities
public import SupportVocabulary
public import SupportMetrics

/// What a supporter node offers its front ends (the REST API and the web console): codes, sessions, accounts,
/// sign-in, API tokens and the audit trail, in the values of this module.
///
/// A front end built on this protocol sees no registry, store or wire message: the compiler keeps it so, because
/// this module depends on none of them. `SupporterNode` conforms; a front end is handed one.
///
/// Every change is decided, stored and audited before it returns (the node's audit rule); a thrown
/// ``SupporterNodeError`` means nothing changed. Methods marked *blocking* wait on the store: call them through
/// ``run(_:)``, never on an event loop.
public protocol SupporterService: AnyObject, Sendable {
    /// Where the node reads the wall time.
    var clock: any NodeClock { get }

    /// How long a proof of ``knownSignInProof(login:)`` stays valid.
    static var knownSignInLifetime: TimeInterval { get }

    // MARK: codes

    /// The code's record and state, or nil when there is no such code.
    func code(_ code: String) -> SessionCodeInfo?
    /// Every code.
    func codes() -> [SessionCodeInfo]
    /// The codes `offset ..< offset + limit`, and how many there are.
    func codes(offset: Int, limit: Int) -> (codes: [SessionCodeInfo], total: Int)
    /// Creates a code; `validUntil` wins over `lifetime`, both nil is the node's default lifetime.
    func createCode(
        type: SessionCodeType, details: SessionCodeDetails, lifetime: Duration?, validUntil: Date?, by actor: AuditActor
    ) async throws(SupporterNodeError) -> SessionCodeInfo
    /// Changes a code's record (not its code, type or feature rules).
    @discardableResult
    func updateCode(
        _ code: String, by actor: AuditActor, _ change: @Sendable (inout SessionCodeRecord) -> Void
    ) async throws(SupporterNodeError) -> SessionCodeInfo
    /// Replaces a code's feature rules (SPEC §15.3).
    @discardableResult
    func setFeatureRules(_ code: String, _ rules: FeatureRules, by actor: AuditActor)
        async throws(SupporterNodeError) -> SessionCodeInfo
    /// Closes a code: a device on it is told the code is closed.
    func closeCode(_ code: String, by actor: AuditActor) async throws(SupporterNodeError)
    /// Deletes a code: a device on it is told the code is invalid.
    func deleteCode(_ code: String, by actor: AuditActor) async throws(SupporterNodeError)

    // MARK: sessions (routed to the node holding the device, in a cluster)

    /// Sends a connection request as `account` to the device on `code`, with the media descriptor its
    /// SESSION_STARTED will carry (SPEC §15, 1–4,096 bytes, never logged); returns the request's id.
    @discardableResult
    func requestConnection(
        code: String, account: SupporterAccount, type: ConnectionType, features: FeatureSet,
        mediaDescriptor: [UInt8]?, by actor: AuditActor
    ) async throws(SupporterNodeError) -> UInt32
    /// Withdraws the pending request on `code`.
    func abortRequest(code: String, by actor: AuditActor) async throws(SupporterNodeError)
    /// Ends the session on `code`, with an optional text for the device's user.
    func endSession(code: String, text: String?, by actor: AuditActor) async throws(SupporterNodeError)
    /// Asks the device on `code` for `feature` during its session (SPEC §15.3); the answer is audited.
    func askFeature(code: String, feature: Feature.ID, text: String?, by actor: AuditActor)
        async throws(SupporterNodeError)
    /// Withdraws the pending ask for `feature` on `code` (FEATURE_WITHDRAW); the device's answer follows as an event.
    func withdrawFeatureAsk(code: String, feature: Feature.ID, by actor: AuditActor) async throws(SupporterNodeError)
    /// Sends chat text to the device on `code` (SPEC §15.4); needs `chat` granted. Returns the message's id (its
    /// `message_sent` row names it, and its delivery); `busy` while 16 messages wait for the device.
    @discardableResult
    func sendChat(code: String, text: String, by actor: AuditActor) async throws(SupporterNodeError) -> UInt32
    /// Sends an application message to the device on `code` (SPEC §15.4, kind 2); needs `app_messages` granted.
    /// Returns its id, as ``sendChat(code:text:by:)``.
    @discardableResult
    func sendApplicationMessage(code: String, contentType: String, body: [UInt8], by actor: AuditActor)
        async throws(SupporterNodeError) -> UInt32

    /// Sends a file (1 byte to 16 MiB) to the device on `code` (SPEC §15.4, kind 3); needs `file_share` granted.
    /// Returns its transfer id; `busy` while 4 files are being sent on the session.
    @discardableResult
    func sendFile(code: String, name: String, contentType: String?, bytes: [UInt8], by actor: AuditActor)
        async throws(SupporterNodeError) -> UInt32

    // MARK: accounts and sign-in

    /// Every account, ordered by login.
    func accounts() -> [SupporterAccount]
    /// The account `login`, or nil.
    func account(_ login: String) -> SupporterAccount?
    /// Creates an account.
    func addAccount(
        login: String, displayName: String, role: SupporterRole, password: String, by actor: AuditActor
    ) async throws(SupporterNodeError) -> SupporterAccount
    /// Changes an account; refused when it would leave no active admin.
    func changeAccount(_ login: String, _ change: SupporterAccountChange, by actor: AuditActor)
        async throws(SupporterNodeError) -> SupporterAccount
    /// Checks a password and opens a login session; the secret is shown once.
    func signIn(login: String, password: String, address: String, knownSignIn: String?)
        async throws(SignInError) -> (secret: String, session: LoginSession, account: SupporterAccount)
    /// Ends the login session of `secret`; it stays valid when that cannot be stored.
    func signOut(secret: String, address: String?) async throws(SupporterNodeError)
    /// The open login session of `secret` and its (active) account, or nil.
    func loginSession(secret: String) -> (session: LoginSession, account: SupporterAccount)?
    /// A proof that whoever holds it signed in to `login` (the `rsup_known` cookie), or nil for no such account.
    func knownSignInProof(login: String) -> String?

    // MARK: API tokens (blocking)

    /// Every API token's record, revoked ones included. Blocking.
    func apiTokens() throws(SupporterNodeError) -> [APITokenRecord]
    /// Accepts `token` (made with ``APITokenScope/makeToken()``); returns its record. Blocking.
    @discardableResult
    func addAPIToken(_ token: String, scope: APITokenScope, label: String?, by actor: AuditActor)
        throws(SupporterNodeError) -> APITokenRecord
    /// Revokes the token with public id `id`. Blocking.
    func revokeAPIToken(id: String, by actor: AuditActor) throws(SupporterNodeError)
    /// The accepted token's record, or nil.
    func tokenRecord(of token: String) -> APITokenRecord?

    // MARK: webhooks (blocking)

    /// Every webhook endpoint with its pending and failed counts, oldest first. Blocking.
    func webhookEndpoints() throws(SupporterNodeError) -> [WebhookEndpoint]
    /// Registers an endpoint (URL checked, kinds known, at most 50 endpoints); the answer carries its secret. Blocking.
    func addWebhookEndpoint(
        url: String, eventKinds: [String], description: String?, isEnabled: Bool, by actor: AuditActor
    ) throws(SupporterNodeError) -> WebhookEndpoint
    /// Changes endpoint `id` (`not_found` when there is none). Blocking.
    func changeWebhookEndpoint(id: String, _ change: WebhookEndpointChange, by actor: AuditActor)
        throws(SupporterNodeError) -> WebhookEndpoint
    /// Deletes endpoint `id` and its delivery log (`not_found` when there is none). Blocking.
    func deleteWebhookEndpoint(id: String, by actor: AuditActor) throws(SupporterNodeError)
    /// Endpoint `endpointID`'s delivery log, newest first, below `beforeID`, only in `state` when given. Blocking.
    func webhookDeliveries(endpointID: String, beforeID: Int64?, state: WebhookDelivery.State?, limit: Int)
        throws(SupporterNodeError) -> [WebhookDelivery]
    /// Makes an endpoint's pending deliveries due now, without waiting out their back-off; returns how many
    /// (`not_found` when there is no such endpoint). Blocking.
    func retryWebhookDeliveries(endpointID: String, by actor: AuditActor) throws(SupporterNodeError) -> Int
    /// Delivers a delivery's event again, as a new delivery (`not_found` when there is no such delivery). Blocking.
    func redeliverWebhook(endpointID: String, deliveryID: Int64, by actor: AuditActor)
        throws(SupporterNodeError) -> WebhookDelivery

    // MARK: audit trail (blocking reads)

    /// Audit rows filtered by code and time (`from` included, `to` excluded), by id window, oldest or newest first.
    /// Blocking.
    func auditEvents(
        code: String?, from: Date?, to: Date?, limit: Int, afterID: Int64?, beforeID: Int64?, newestFirst: Bool
    ) throws(SupporterNodeError) -> [AuditEvent]
    /// The contents kept for these audit rows (`message_sent`, `message_received`, `file_received`), by row id; a
    /// file's bytes left out. A row whose content is past its retention is missing. Blocking.
    func sessionContents(auditIDs: [Int64]) throws(SupporterNodeError) -> [Int64: StoredSessionContent]
    /// The file kept for the audit row `auditID`, with its bytes, or nil (none, or past its retention). Blocking.
    func sessionFile(auditID: Int64) throws(SupporterNodeError) -> StoredSessionContent?
    /// The node's metrics registry, which services beside it (the REST API) add their own families to.
    var metrics: MetricsRegistry { get }
    /// The newest audit row's id (0 when there is none). Blocking.
    func latestAuditID() throws(SupporterNodeError) -> Int64
    /// ``code(_:)``, or, when this node does not hold the code, the code as stored (nil when there is none): an audit
    /// row can be read before its code reaches the node (a creation is durable before it is applied here; another node
    /// of the cluster made it). Blocking.
    func codeReadingStore(_ code: String) throws(SupporterNodeError) -> SessionCodeInfo?
    /// Appends rows a front end audits itself (its throttled sign-in failures); returns once they are durable.
    func appendAudit(_ events: [AuditEvent]) async throws(SupporterNodeError)

    /// Runs blocking work (the methods marked blocking) off every event loop, bounded; `busy` when too much waits.
    func run<Result: Sendable>(_ work: @escaping @Sendable () throws(SupporterNodeError) -> Result)
        async throws(SupporterNodeError) -> Result

    // MARK: health (probes)

    /// Calls `done` once every event loop of the node has run a turn (liveness): never, while one of them is stuck.
    func whenLoopsRespond(_ done: @escaping @Sendable () -> Void)
    /// Checks the node's readiness and calls `done` with it, from whichever thread finishes the check; the store's
    /// part reads the store on the node's worker thread, so `done` may never come while the store hangs — the caller
    /// bounds the wait.
    func checkReadiness(_ done: @escaping @Sendable (NodeHealth) -> Void)

    /// Queues blocking `work` like ``run(_:)`` and returns at once (false: refused, too much waits); `work` runs on
    /// the node's worker thread and hands its result on from there itself — no task in between, so a caller on an
    /// event loop does not wait for a free thread of the cooperative pool.
    func submit(_ work: @escaping @Sendable () -> Void) -> Bool
}
