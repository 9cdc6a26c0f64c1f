import Foundation
import Synchronization
import SupporterModel

/// The ``AuthenticationGuard`` shared by the REST API's handlers, behind a lock held for in-memory work only.
final class GuardBox: Sendable {
    private let state: Mutex<AuthenticationGuard>

    init(_ value: AuthenticationGuard) { state = Mutex(value) }

    func check(_ credential: AuthenticationGuard.Credential, address: String, now: Date) -> AuthenticationGuard.Decision {
        state.withLock { $0.check(credential, address: address, now: now) }
    }

    func tick(now: Date, everything: Bool = false) -> [AuditEvent] {
        state.withLock { $0.tick(now: now, everything: everything) }
    }
}
