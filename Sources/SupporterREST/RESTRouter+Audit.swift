import Foundation
import SupportHTTP
import SupporterModel

/// The audit trail, paged (`GET /audit`) and live (`GET /events`).
extension RESTRouter {
    /// `GET /audit?code=&kind=&before_id=&limit=`: newest first, only what the caller may see.
    func listAudit(_ call: RESTCall, as principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        let request = call.request
        guard let limit = Self.integer(request.query("limit"), default: 100), (1...1000).contains(limit) else {
            throw RESTError(.badRequest, "limit must be a whole number from 1 to 1000")
        }
        var before: Int64?
        if let text = request.query("before_id") {
            guard let value = Self.integer(text, default: 0) else {
                throw RESTError(.badRequest, "before_id must be a whole number")
            }
            before = Int64(value)
        }
        let code = request.query("code")
        if let code { _ = try visibleCode(code, for: principal) }
        let kind = request.query("kind")
        if code == nil, !principal.isAdmin {
            throw RESTError(.forbidden, "a supporter reads the audit trail of one code at a time (code=…)")
        }
        var events: [AuditEvent] = []
        var cursor = before
        var reachedEnd = false
        // Filtering by kind happens here: read pages until `limit` match or the trail ends (bounded to 20 pages).
        for _ in 0..<20 {
            let page: [AuditEvent]
            do {
                page = try node.auditEvents(
                    code: code, from: nil, to: nil, limit: limit, afterID: nil, beforeID: cursor, newestFirst: true)
            } catch {
                throw RESTError(error)
            }
            events += page.filter { kind == nil || $0.kind.rawValue == kind }
            cursor = page.last?.id ?? cursor
            if page.count < limit {
                reachedEnd = true
                break
            }
            if events.count >= limit { break }
        }
        events = Array(events.prefix(limit))
        // A full page goes on after its last row; a page cut short by the 20-page bound goes on where reading stopped
        // (so a client is never told the trail ended when it did not).
        let next = events.count == limit ? events.last?.id : (reachedEnd ? nil : cursor)
        return .api(.ok, encoding: APIAuditPage(events: events.map(APIAuditEvent.init), nextBeforeID: next))
    }

    /// Rows a session report reads at most: 20 pages of 1,000 (a code with more — a device reconnecting all day —
    /// is reported from its first 20,000 rows, and the answer says so in `X-Report-Truncated: true`).
    static let reportRowLimit = 20_000

    /// The audit rows a report reads, oldest first, a page of 1,000 at a time, at most ``reportRowLimit``.
    func reportRows(code: String?, from: Date?, to: Date?) throws(RESTError) -> [AuditEvent] {
        var events: [AuditEvent] = []
        var cursor: Int64?
        while events.count < Self.reportRowLimit {
            let page: [AuditEvent]
            do {
                page = try node.auditEvents(
                    code: code, from: from, to: to, limit: 1000, afterID: cursor, beforeID: nil, newestFirst: false)
            } catch {
                throw RESTError(error)
            }
            events += page
            guard page.count == 1000, let last = page.last?.id else { break }
            cursor = last
        }
        return events
    }

    /// `GET /sessions/{code}/report`: the code's sessions from its audit trail (``SessionReport``).
    func sessionReport(_ call: RESTCall, for principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        let code = call["code"]
        _ = try visibleCode(code, for: principal)
        let events = try reportRows(code: code, from: nil, to: nil)
        var headers = HTTPHeaders()
        if events.count >= Self.reportRowLimit { headers.add(name: "X-Report-Truncated", value: "true") }
        return .api(.ok, encoding: APISessionReport(report: SessionReport(code: code, events: events)), headers: headers)
    }

    /// `GET /sessions/reports?from=&to=`: the sessions of every code whose rows fall in [from, to) as CSV (admins).
    /// Each code's report is built from its rows in the range, so a session that began before `from` shows what
    /// happened in the range only. Reads at most ``reportRowLimit`` rows (`X-Report-Truncated: true` beyond).
    func sessionReportsCSV(_ call: RESTCall, as principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        let request = call.request
        guard let fromText = request.query("from"), let from = RESTTime.parse(fromText),
            let toText = request.query("to"), let to = RESTTime.parse(toText)
        else { throw RESTError(.badRequest, "from and to are required, as RFC 3339 times") }
        guard from < to else { throw RESTError(.badRequest, "from must be before to") }
        let events = try reportRows(code: nil, from: from, to: to)
        var order: [String] = []
        var byCode: [String: [AuditEvent]] = [:]
        for event in events {
            guard let code = event.code else { continue }
            if byCode[code] == nil { order.append(code) }
            byCode[code, default: []].append(event)
        }
        let reports = order.map { SessionReport(code: $0, events: byCode[$0] ?? []) }
        var headers = HTTPHeaders([
            ("Content-Type", "text/csv; charset=utf-8; header=present"),
            ("Content-Disposition", "attachment; filename=\"sessions.csv\""),
        ])
        if events.count >= Self.reportRowLimit { headers.add(name: "X-Report-Truncated", value: "true") }
        return HTTPResponse(status: .ok, headers: headers, body: Array(SessionReportCSV.text(reports).utf8))
    }

    /// `GET /events`: Server-Sent Events (``EventFeed``), resuming after `Last-Event-ID` when sent.
    func streamEvents(_ call: RESTCall, as principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        let request = call.request
        var lastEventID: Int64?
        if let text = request.headers["Last-Event-ID"] ?? request.query("last_event_id") {
            guard let value = Self.integer(text.trimmingCharacters(in: .whitespaces), default: 0) else {
                throw RESTError(.badRequest, "Last-Event-ID must be an event id (a whole number)")
            }
            lastEventID = Int64(value)
        }
        let credential: EventFeed.Credential
        if let sessionSecret = call.sessionSecret {
            credential = .session(sessionSecret)
        } else if let token = AuthenticationGuard.bearerToken(request.headers["Authorization"]) {
            credential = .token(token)
        } else {
            throw RESTError(.unauthorized, "missing bearer token: send 'Authorization: Bearer <admin token>'")
        }
        let stream = try feed.subscribe(principal, credential: credential, lastEventID: lastEventID)
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": "text/event-stream", "Cache-Control": "no-store"], stream: stream)
    }
}
