/// Whether an account may sign in and act.
public enum SupporterAccountState: String, Sendable, Hashable, CaseIterable {
    case active
    case disabled
}
