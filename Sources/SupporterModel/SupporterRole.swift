/// What a supporter account may do: `supporter` works on its own and unassigned codes; `admin` on every code, and
/// manages accounts and API tokens.
public enum SupporterRole: String, Sendable, Hashable, CaseIterable {
    case supporter
    case admin
}
