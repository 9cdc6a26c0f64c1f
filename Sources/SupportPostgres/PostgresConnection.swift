internal import CLibPQ
import Glibc

/// One connection to PostgreSQL through libpq: parameterized statements in text format, transactions,
/// LISTEN/NOTIFY.
///
/// Blocking: every call waits for the server. Use a connection from one thread at a time, never from an event loop
/// (the node gives each one its own thread: ``PostgresWorker``). Not `Sendable` for that reason.
///
/// The connection string is libpq's (`host=… port=… user=… dbname=… sslmode=verify-full sslrootcert=…`, or a
/// `postgresql://` URI); TLS, with certificate and host name checks, is libpq's own.
public final class PostgresConnection {
    private var handle: OpaquePointer?
    /// The connection string it was opened with (it may hold a password: never logged).
    private let connectionString: String

    /// Connects; throws `connection` with libpq's reason (host, port, authentication, TLS).
    public init(_ connectionString: String) throws(PostgresError) {
        self.connectionString = connectionString
        handle = PQconnectdb(connectionString)
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map(Self.errorMessage) ?? "out of memory"
            if let handle { PQfinish(handle) }
            self.handle = nil
            throw PostgresError(.connection, operation: "connect to PostgreSQL", message: message)
        }
        // Notices (e.g. "relation already exists, skipping") are not errors; keep them off stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { if let handle { PQfinish(handle) } }

    /// Whether the connection is usable.
    public var isOpen: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Drops the connection and opens it again with the same settings (after the server restarted).
    public func reconnect() throws(PostgresError) {
        guard let handle else { throw PostgresError(.closed, operation: "reconnect", message: "the connection is closed") }
        PQreset(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(.connection, operation: "reconnect to PostgreSQL", message: Self.errorMessage(handle))
        }
    }

    /// Closes the connection; later calls throw `closed`.
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// Runs one statement with `$1…$n` parameters (text; nil is NULL) and returns its rows.
    @discardableResult
    public func query(_ sql: String, _ parameters: [String?] = [], operation: String? = nil) throws(PostgresError)
        -> PostgresRows
    {
        let operation = operation ?? String(sql.prefix(60))
        guard let handle else { throw PostgresError(.closed, operation: operation, message: "the connection is closed") }
        // Keep the C strings alive for the call.
        let cStrings: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { for pointer in cStrings { free(pointer) } }
        let result = cStrings.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
                PQexecParams(handle, sql, Int32(parameters.count), nil, values.baseAddress, nil, nil, 0)
            }
        }
        guard let result else {
            throw PostgresError(.connection, operation: operation, message: Self.errorMessage(handle))
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresRows(result)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            // The primary message alone ("duplicate key value violates …"), without the "ERROR:  " severity prefix.
            let message =
                PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
                ?? PQresultErrorMessage(result).map { String(cString: $0) } ?? "unknown error"
            let kind: PostgresError.Kind = PQstatus(handle) == CONNECTION_OK ? .query : .connection
            throw PostgresError(kind, operation: operation, message: Self.firstLine(message), sqlState: state)
        }
    }

    /// Runs `body` in a transaction (`BEGIN` … `COMMIT`, or `ROLLBACK` when it throws).
    public func transaction<Result>(
        _ isolation: String = "READ COMMITTED", _ body: (PostgresConnection) throws(PostgresError) -> Result
    ) throws(PostgresError) -> Result {
        try query("BEGIN ISOLATION LEVEL \(isolation)", operation: "begin transaction")
        do {
            let result = try body(self)
            try query("COMMIT", operation: "commit")
            return result
        } catch {
            _ = try? query("ROLLBACK", operation: "roll back")
            throw error
        }
    }

    /// Notifications received so far (after `LISTEN channel`), waiting up to `timeout` for the first one when none is
    /// there. PostgreSQL delivers a notification when the transaction that sent it commits, in commit order.
    ///
    /// - Parameter wake: a descriptor (the read end of a pipe) that ends the wait early, with whatever has arrived,
    ///   once it is readable: how the owner of a listening thread stops it at once. It is not read here.
    public func notifications(timeout: Duration, wakingOn wake: Int32? = nil) throws(PostgresError)
        -> [PostgresNotification]
    {
        guard let handle else { throw PostgresError(.closed, operation: "read notifications", message: "closed") }
        var found = drain(handle)
        if !found.isEmpty { return found }
        var descriptors = [pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)]
        if let wake { descriptors.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
        if ready > 0, descriptors[0].revents != 0 {
            guard PQconsumeInput(handle) == 1 else {
                throw PostgresError(.connection, operation: "read notifications", message: Self.errorMessage(handle))
            }
            found = drain(handle)
        }
        return found
    }

    private func drain(_ handle: OpaquePointer) -> [PostgresNotification] {
        var found: [PostgresNotification] = []
        _ = PQconsumeInput(handle)
        while let notice = PQnotifies(handle) {
            let channel = String(cString: notice.pointee.relname)
            let payload = notice.pointee.extra.map { String(cString: $0) } ?? ""
            found.append(PostgresNotification(channel: channel, payload: payload, processID: notice.pointee.be_pid))
            PQfreemem(notice)
        }
        return found
    }

    private static func errorMessage(_ handle: OpaquePointer) -> String {
        firstLine(PQerrorMessage(handle).map { String(cString: $0) } ?? "unknown error")
    }

    private static func firstLine(_ text: String) -> String {
        let line = text.split(separator: "\n").first { !$0.allSatisfy(\.isWhitespace) } ?? ""
        return String(line.drop { $0.isWhitespace })
    }
}

/// The libpq this process runs with.
public enum PostgresLibrary {
    /// Its version, e.g. `15.12` (PostgreSQL 10 and later number their releases MAJOR.MINOR).
    public static var version: String {
        let number = Int(PQlibVersion())
        return "\(number / 10_000).\(number % 10_000)"
    }
}

/// A `NOTIFY` received.
public struct PostgresNotification: Sendable, Hashable {
    public let channel: String
    public let payload: String
    /// The server process of the session that sent it.
    public let processID: Int32
}

/// The rows of a statement, as text (nil for NULL), with their column names.
public struct PostgresRows: Sendable, Hashable {
    public let columns: [String]
    public let rows: [[String?]]

    init(_ result: OpaquePointer) {
        let columnCount = Int(PQnfields(result))
        columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        rows = (0..<Int(PQntuples(result))).map { row in
            (0..<columnCount).map { column in
                PQgetisnull(result, Int32(row), Int32(column)) == 1
                    ? nil : String(cString: PQgetvalue(result, Int32(row), Int32(column)))
            }
        }
    }

    public var count: Int { rows.count }

    /// The value of `column` in row `row`.
    public subscript(row: Int, column: String) -> String? {
        guard let index = columns.firstIndex(of: column), rows.indices.contains(row) else { return nil }
        return rows[row][index]
    }
}
