public import Foundation
import SupporterCore
import SupporterStore
import SupportUtilities
import SupportWire
public import SupportVocabulary
public import SupporterModel

extension SupporterNode {
    /// Every account, by login.
    public func accounts() -> [SupporterAccount] {
        people.withLock { $0.accounts.values.sorted { $0.login < $1.login }.map(SupporterAccount.init) }
    }

    /// The account with `login`.
    public func account(_ login: String) -> SupporterAccount? {
        people.withLock { $0.accounts[login].map(SupporterAccount.init) }
    }

    /// Creates an account. The password is hashed with scrypt off the loops; the creation is audited with `actor`.
    public func addAccount(
        login: String, displayName: String, role: SupporterRole = .supporter, password: String,
        by actor: AuditActor = .local
    ) async throws(SupporterNodeError) -> SupporterAccount {
        try SupporterAccount.validate(login: login)
        try SupporterAccount.validate(displayName: displayName)
        try SupporterAccount.validate(password: password)
        let hash = try await hashPassword(password)
        let now = clock.wallTime
        let record = SupporterAccountRecord(
            login: login, displayName: displayName, role: role, state: .active, passwordHash: hash, createdAt: now,
            updatedAt: now)
        var details = actor.details
        details["account"] = login
        details["display_name"] = displayName
        details["role"] = role.rawValue
        // Decide → commit → apply → answer, one account change at a time (the last-admin rule spans accounts).
        try await changingAccounts { () throws(SupporterNodeError) in
            guard account(login) == nil else {
                throw SupporterNodeError("an account with the login '\(login)' exists", kind: .conflict)
            }
            try await commit([.saveAccount(record), .audit(AuditEvent(time: now, kind: .accountCreated, details: details))])
            people.withLock { $0.accounts[login] = record }
        }
        logger.log(.info, "account \(login) created (\(role.rawValue))")
        return SupporterAccount(record)
    }

    /// Changes an account. Disabling it, or changing its password, ends its login sessions. The last active admin
    /// cannot be disabled or made a supporter. Audited with what changed (never the password).
    public func changeAccount(_ login: String, _ change: SupporterAccountChange, by actor: AuditActor = .local)
        async throws(SupporterNodeError) -> SupporterAccount
    {
        if let name = change.displayName { try SupporterAccount.validate(displayName: name) }
        if let password = change.password { try SupporterAccount.validate(password: password) }
        guard account(login) != nil else { throw SupporterNodeError("no account has the login '\(login)'", kind: .notFound) }
        let hash: String?
        if let password = change.password { hash = try await hashPassword(password) } else { hash = nil }
        return try await changingAccounts { () throws(SupporterNodeError) in
            let now = clock.wallTime
            let result = people.withLock { state -> Result<(SupporterAccountRecord, SupporterAccountRecord), SupporterNodeError> in
                guard var record = state.accounts[login] else {
                    return .failure(SupporterNodeError("no account has the login '\(login)'", kind: .notFound))
                }
                let before = record
                if let name = change.displayName { record.displayName = name }
                if let role = change.role { record.role = role }
                if let newState = change.state { record.state = newState }
                if let hash { record.passwordHash = hash }
                let losesAdmin = before.role == .admin && before.state == .active && (record.role != .admin || record.state != .active)
                if losesAdmin, !state.accounts.values.contains(where: { $0.login != login && $0.role == .admin && $0.state == .active }) {
                    return .failure(
                        SupporterNodeError("'\(login)' is the last active admin; make another admin first", kind: .conflict))
                }
                record.updatedAt = now
                return .success((before, record))
            }
            let (before, record): (SupporterAccountRecord, SupporterAccountRecord)
            switch result {
            case .success(let pair): (before, record) = pair
            case .failure(let error): throw error
            }
            var details = actor.details
            details["account"] = login
            var changed: [String] = []
            if before.displayName != record.displayName {
                changed.append("display_name")
                details["display_name"] = record.displayName
            }
            if before.role != record.role {
                changed.append("role")
                details["role"] = record.role.rawValue
            }
            if before.state != record.state {
                changed.append("state")
                details["state"] = record.state.rawValue
            }
            if hash != nil { changed.append("password") }
            details["changed"] = changed.joined(separator: ",")
            let endsSessions = record.state == .disabled || hash != nil
            var intents: [StoreIntent] = [.saveAccount(record)]
            if endsSessions { intents.append(.deleteLoginSessions(login: login)) }
            intents.append(.audit(AuditEvent(time: now, kind: .accountChanged, details: details)))
            try await commit(intents)
            people.withLock { state in
                state.accounts[login] = record
                if endsSessions { state.loginSessions.closeAll(of: login) }
            }
            return SupporterAccount(record)
        }
    }

    /// Runs a change of the accounts from its decision to its answer after every earlier one (``ChangeLanes``): the
    /// last-admin rule is about all accounts at once.
    func changingAccounts<Result: Sendable>(_ body: () async throws(SupporterNodeError) -> Result)
        async throws(SupporterNodeError) -> Result
    {
        guard let result = try await changes.run("accounts", body) else {
            throw SupporterNodeError(
                "\(ChangeLanes.waitingLimit) account changes are waiting already; try again", kind: .busy)
        }
        return result
    }

    /// Checks `login` and `password` from `address` and opens a login session. Rate-limited per address and account
    /// (``LoginGuard``) before any hashing; failures are audited at most once a minute per address (the rest counted).
    /// Returns the session's secret (the cookie value) with the session and the account.
    ///
    /// Admission to the password worker (issue 20, finding 2), before anything waits: at most
    /// ``BlockingWorker/Limits/perKey`` checks per source address key (an IPv6 client's /64) wait or run at once, and
    /// ``BlockingWorker/Limits/capacity`` in all; a sign-in refused for lack of room (``SignInError/Kind/busy``, 503)
    /// counts as a failed attempt for the address and the login, so a flood of them ends in the flood's own block.
    /// A sign-in carrying a valid `knownSignIn` proof for `login` (``knownSignInProof(login:)``, handed out at an
    /// earlier success) is checked in the reserved lane (a thread of its own), before every other waiting check: the owner of an account
    /// signs in promptly while strangers fill the queue. A refused attempt (429) costs no hash, no store write and no
    /// audit row beyond the throttled ones.
    public func signIn(login: String, password: String, address: String, knownSignIn: String? = nil)
        async throws(SignInError) -> (secret: String, session: LoginSession, account: SupporterAccount)
    {
        let attemptClock = Self.guardClock(self.clock.wallTime)
        // The audit throttle counts the address's key (an IPv6 client's whole /64, as LoginGuard does itself).
        let key = IPAddressText.sourceKey(address)
        // Begun under the lock, so simultaneous attempts count each other (LoginGuard).
        let (blocked, record) = people.withLock { state in
            (state.loginGuard.beginAttempt(login: login, address: address, now: attemptClock), state.accounts[login])
        }
        if let blocked { throw SignInError(kind: .rateLimited(retryAfter: blocked)) }
        // An unknown login costs a hash too, so timing does not tell which logins exist.
        let stored = record.flatMap { PasswordHash($0.passwordHash) } ?? Self.decoyHash
        let known = record != nil && Self.isValid(knownSignIn, login: login, hash: stored, now: self.clock.wallTime)
        // The reserved lane's key is the login: the owner's proof is not crowded out by neighbours behind its address.
        let check = await passwords.run(lane: known ? .reserved : .normal, key: known ? "login:" + login : key) {
            stored?.verify(password) ?? false
        }
        guard let matches = check else {
            people.withLock { $0.loginGuard.finishAttempt(login: login, address: address, .wrong, now: attemptClock) }
            throw SignInError(kind: .busy)
        }
        let now = clock.wallTime
        guard matches, let record else {
            let row = people.withLock { state -> AuditEvent? in
                state.loginGuard.finishAttempt(login: login, address: address, .wrong, now: Self.guardClock(now))
                guard state.signInAudit.admit(key, now: Self.guardClock(now)) else { return nil }
                return AuditEvent(
                    time: now, kind: .signInFailed,
                    details: ["login": String(login.prefix(64)), "source_address": address, "reason": "wrong_credentials"])
            }
            if let row { try? await commit([.audit(row)]) }
            throw SignInError(kind: .wrongCredentials)
        }
        guard record.state == .active else {
            people.withLock { $0.loginGuard.finishAttempt(login: login, address: address, .unchecked, now: Self.guardClock(now)) }
            throw SignInError(kind: .disabled)
        }
        let account = SupporterAccount(record)
        people.withLock { $0.loginGuard.finishAttempt(login: login, address: address, .right, now: Self.guardClock(now)) }
        let opened = LoginSessionTable.makeSession(login: login, now: now)
        let actor = account.actor(kind: "rest", address: address, loginSession: opened.session.id)
        // Stored before it is in effect and the cookie is handed out, so a restart right after still knows the
        // session, and a failed write leaves no session anywhere.
        do {
            try await commit([
                .saveLoginSession(opened.record), .audit(AuditEvent(time: now, kind: .signedIn, details: actor.details)),
            ])
        } catch {
            throw SignInError(kind: .busy)
        }
        people.withLock { $0.loginSessions.insert(opened) }
        logger.log(.info, "\(login) signed in from \(address)")
        if let stored, stored.needsUpgrade() {
            // Hashed with weaker parameters than today's: hash the password again now that we have it.
            Task { await self.upgradeHash(of: login, password: password) }
        }
        return (opened.secret, opened.session, account)
    }

    /// How long a proof of ``knownSignInProof(login:)`` stays valid.
    public static let knownSignInLifetime: TimeInterval = 30 * 24 * 3600

    /// A proof that whoever holds it signed in to `login` (the REST API hands it out after a successful sign-in, as
    /// the cookie `rsup_known`): `login:expiry:mac`, the expiry in Unix seconds, the MAC an HMAC-SHA256 of
    /// `rsup-known-sign-in:login:expiry` keyed by the account's stored password hash
    /// (``PasswordHash/authenticationCode(for:)``). No one without the store can make one; a new password ends every
    /// proof of the old one. It only moves a sign-in to the reserved lane: the password is still checked, and the
    /// limits still apply. Nil for an unknown login.
    public func knownSignInProof(login: String) -> String? {
        guard let hash = people.withLock({ $0.accounts[login] }).flatMap({ PasswordHash($0.passwordHash) }) else {
            return nil
        }
        let expiry = Int64(clock.wallTime.timeIntervalSince1970 + Self.knownSignInLifetime)
        return "\(login):\(expiry):" + Hex.encode(Self.knownSignInCode(login: login, expiry: expiry, hash: hash))
    }

    private static func knownSignInCode(login: String, expiry: Int64, hash: PasswordHash) -> [UInt8] {
        hash.authenticationCode(for: Array("rsup-known-sign-in:\(login):\(expiry)".utf8))
    }

    /// Whether `proof` is a live ``knownSignInProof(login:)`` of `login` for `hash` (compared in constant time).
    static func isValid(_ proof: String?, login: String, hash: PasswordHash?, now: Date) -> Bool {
        guard let proof, let hash else { return false }
        let parts = proof.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == login, let expiry = Int64(parts[1]),
            Double(expiry) > now.timeIntervalSince1970, let given = Hex.decode(String(parts[2]))
        else { return false }
        return ConstantTime.equal(given, knownSignInCode(login: login, expiry: expiry, hash: hash))
    }

    /// Stores `password` hashed with today's parameters for `login` (its old hash was weaker); sessions stay.
    func upgradeHash(of login: String, password: String) async {
        guard let hash = try? await hashPassword(password, lane: .normal) else { return }
        let record = people.withLock { state -> SupporterAccountRecord? in
            guard var record = state.accounts[login], record.state == .active else { return nil }
            record.passwordHash = hash
            state.accounts[login] = record
            return record
        }
        guard let record else { return }
        try? await commit([
            .saveAccount(record),
            .audit(
                AuditEvent(
                    time: clock.wallTime, kind: .accountChanged,
                    details: ["actor": "node", "account": login, "changed": "password_hash_parameters"])),
        ])
        logger.log(.info, "the password hash of \(login) was upgraded to today's scrypt parameters")
    }

    /// The live login session whose secret is `secret`, with its account (which must still be active).
    public func loginSession(secret: String) -> (session: LoginSession, account: SupporterAccount)? {
        people.withLock { state in
            guard let session = state.loginSessions.use(secret: secret, now: clock.wallTime),
                let record = state.accounts[session.login], record.state == .active
            else { return nil }
            return (session, SupporterAccount(record))
        }
    }

    /// Ends the login session whose secret is `secret` (audited). It ends once its end is stored: when the store
    /// cannot record it, the session stays as it was and the error is thrown (the caller may try again).
    public func signOut(secret: String, address: String? = nil) async throws(SupporterNodeError) {
        let digest = LoginSessionTable.digest(of: secret)
        let found = people.withLock { state -> (LoginSession, SupporterAccountRecord?)? in
            guard let session = state.loginSessions.session(digest: digest) else { return nil }
            return (session, state.accounts[session.login])
        }
        guard let (session, record) = found else { return }
        let actor = AuditActor(
            kind: "rest", address: address, account: session.login, accountName: record?.displayName,
            loginSession: session.id)
        try await commit([
            .deleteLoginSession(digest: digest),
            .audit(AuditEvent(time: clock.wallTime, kind: .signedOut, details: actor.details)),
        ])
        people.withLock { _ = $0.loginSessions.close(secret: secret) }
    }

    /// Sends a connection request on `code` as `account`: the device's user sees the account's display name. A
    /// supporter may use their own and unassigned codes (an unassigned code becomes theirs); an admin any code.
    @discardableResult
    public func requestConnection(
        code: String, account: SupporterAccount, type: ConnectionType, features: FeatureSet = [],
        mediaDescriptor: [UInt8]? = nil, by actor: AuditActor
    ) async throws(SupporterNodeError) -> UInt32 {
        guard account.isActive else { throw SupporterNodeError("the account \(account.login) is disabled", kind: .forbidden) }
        try checkAccess(account, to: code)
        return try await requestConnection(
            code: code, supporterName: account.displayName, type: type, features: features,
            mediaDescriptor: mediaDescriptor, by: actor, assignTo: account.login, replacingAssignee: false)
    }

    /// Throws `forbidden` when `account` may not act on `code` (assigned to another supporter), `not_found` when there
    /// is no such code.
    public func checkAccess(_ account: SupporterAccount, to code: String) throws(SupporterNodeError) {
        guard let info = self.code(code) else {
            throw SupporterNodeError("no session code \(Redact.code(code))", kind: .notFound)
        }
        guard account.mayWork(onCodeAssignedTo: info.record.assignedSupporter) else {
            throw SupporterNodeError(
                "session code \(info.record.code) is assigned to another supporter", kind: .forbidden)
        }
    }

    /// Once a second: forgotten sign-in failures, expired login sessions, and the aggregate rows of sign-in failures
    /// held back. One take of the people lock.
    func accountsTick(now: Date) -> [StoreIntent] {
        let clock = Self.guardClock(now)
        let (suppressed, purge) = people.withLock { state in
            state.loginGuard.tick(now: clock)
            state.loginSessions.sweep(now: now)
            // Once an hour: sessions past their lifetime leave the store too.
            let purge = now >= state.nextLoginSessionPurge
            if purge { state.nextLoginSessionPurge = now.addingTimeInterval(3600) }
            return (state.signInAudit.flush(now: clock), purge)
        }
        var intents: [StoreIntent] = []
        if purge { intents.append(.deleteLoginSessionsBefore(now.addingTimeInterval(-LoginSessionTable.lifetime))) }
        return intents + suppressed.map { item in
            .audit(
                AuditEvent(
                    time: now, kind: .signInFailed,
                    details: [
                        "what": "sign_in_failures_suppressed", "source_address": item.key ?? "*", "count": "\(item.count)",
                    ]))
        }
    }

    /// Hashes a new password: an admin's (creating an account, changing a password) in the reserved lane, an upgrade
    /// after a sign-in in the normal one.
    private func hashPassword(_ password: String, lane: BlockingWorker.Lane = .reserved) async throws(SupporterNodeError)
        -> String
    {
        let make: @Sendable () -> Result<PasswordHash, PasswordHashError> = {
            Result { () throws(PasswordHashError) in try PasswordHash.make(password: password) }
        }
        guard let result = await passwords.run(lane: lane, make)
        else { throw SupporterNodeError("the node is busy hashing other passwords; try again", kind: .busy) }
        switch result {
        case .success(let hash): return hash.description
        case .failure(let error): throw SupporterNodeError(error.description, kind: .refused)
        }
    }

    /// Runs blocking `work` (a synchronous store write or read: API tokens, the REST event feed's polls) on the node's
    /// store worker thread, off the loops and the cooperative pool and never behind password hashing (its own thread);
    /// `busy` when too much such work waits.
    public func run<Result: Sendable>(_ work: @escaping @Sendable () throws(SupporterNodeError) -> Result)
        async throws(SupporterNodeError) -> Result
    {
        guard let result = await storeWork.run({ Swift.Result { () throws(SupporterNodeError) in try work() } }) else {
            throw SupporterNodeError("the node is busy; try again", kind: .busy)
        }
        return try result.get()
    }

    /// ``run(_:)`` without waiting: `work` runs on the store worker thread; false when it was refused.
    public func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        storeWork.submit(work) { _ in }
    }

    static func guardClock(_ date: Date) -> Duration { .milliseconds(date.unixMilliseconds) }

    /// A hash no password matches in practice, checked for unknown logins so they take as long as known ones.
    static let decoyHash: PasswordHash? = try? PasswordHash.make(password: "decoy-\(UInt64.random(in: 0...UInt64.max))")
}
