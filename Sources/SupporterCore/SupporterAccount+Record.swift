package import SupporterModel

extension SupporterAccount {
    package init(_ record: SupporterAccountRecord) {
        self.init(
            login: record.login, displayName: record.displayName, role: record.role, state: record.state,
            createdAt: record.createdAt, updatedAt: record.updatedAt)
    }
}
