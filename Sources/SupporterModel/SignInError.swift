/// Why a sign-in failed.
public struct SignInError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// No such login, or the wrong password (which one is not said).
        case wrongCredentials
        /// The password was right, but the account is disabled.
        case disabled
        /// Too many failures from this address (or on this account from addresses it never signed in from).
        case rateLimited(retryAfter: Duration)
        /// Too many sign-ins are being checked at once.
        case busy
    }

    public let kind: Kind

    public init(kind: Kind) { self.kind = kind }
    public var description: String {
        switch kind {
        case .wrongCredentials: "wrong login or password"
        case .disabled: "this account is disabled; ask an admin"
        case .rateLimited(let wait):
            "too many failed sign-ins; try again in \(max(1, wait.components.seconds + (wait.components.attoseconds > 0 ? 1 : 0))) s"
        case .busy: "the node is busy checking other sign-ins; try again in a moment"
        }
    }
}
