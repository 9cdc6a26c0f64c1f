/// A change to an account; nil members stay as they are.
public struct SupporterAccountChange: Sendable, Hashable {
    public var displayName: String?
    public var role: SupporterRole?
    public var state: SupporterAccountState?
    public var password: String?

    public init(
        displayName: String? = nil, role: SupporterRole? = nil, state: SupporterAccountState? = nil,
        password: String? = nil
    ) {
        self.displayName = displayName
        self.role = role
        self.state = state
        self.password = password
    }
}
