import Testing

@testable import SupportPostgres

@Suite struct PostgresErrorTests {
    struct Cause: Error, Sendable {}

    @Test func kindsCompareByKindAndTheCauseIsNotPartOfEquality() {
        let one = PostgresError(
            .query, operation: "insert audit event", message: "duplicate key", sqlState: "23505", underlying: Cause())
        let two = PostgresError(.query, operation: "insert audit event", message: "duplicate key", sqlState: "23505")
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one.underlying is Cause)
        #expect(one.isUniqueViolation)
        #expect(one != PostgresError(.query, operation: "insert audit event", message: "duplicate key"))
        #expect(one.kind == PostgresError(.query, operation: "other", message: "other").kind)
    }

    @Test func descriptionNamesTheOperationAndTheSQLState() {
        let error = PostgresError(.query, operation: "insert audit event", message: "duplicate key", sqlState: "23505")
        #expect(error.description == "insert audit event: duplicate key (SQLSTATE 23505)")
        #expect(PostgresError(.closed, operation: "query", message: "the connection is closed").description
            == "query: the connection is closed")
    }

    @Test(arguments: [
        (PostgresError.Kind.connection, "connection"), (.query, "query"), (.closed, "closed"),
        (.invalidData, "invalid_data"),
    ])
    func everyKindKeepsItsName(_ kind: PostgresError.Kind, _ name: String) {
        #expect(kind.description == name)
    }
}
