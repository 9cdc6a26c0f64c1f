import Foundation
import SupportHTTP
import SupporterModel

/// A session's messages and files: the history with contents, the files with their progress, and a file's download.
extension RESTRouter {
    /// The kinds of audit row `GET /sessions/{code}/messages` lists.
    static let messageKinds: Set<AuditEvent.Kind> = [
        .messageSent, .messageReceived, .messageDelivered, .messageRefused, .messagesUndelivered, .fileProgress,
        .fileReceived, .fileDelivered, .fileRefused,
    ]

    /// `GET /sessions/{code}/messages?after_id=&limit=`: the code's message and file rows, oldest first, each with
    /// the content it held while that is kept; `next_after_id` goes on from there (null: nothing more yet).
    func listSessionMessages(_ call: RESTCall, for principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        let request = call.request
        let code = call["code"]
        _ = try visibleCode(code, for: principal)
        guard let limit = Self.integer(request.query("limit"), default: 100), (1...500).contains(limit) else {
            throw RESTError(.badRequest, "limit must be a whole number from 1 to 500")
        }
        guard let after = Self.integer(request.query("after_id"), default: 0) else {
            throw RESTError(.badRequest, "after_id must be a whole number")
        }
        var events: [AuditEvent] = []
        var cursor = Int64(after)
        var reachedEnd = false
        // The code's other rows are skipped here: read pages until `limit` match or the trail ends (20 pages at most).
        for _ in 0..<20 {
            let page: [AuditEvent]
            do {
                page = try node.auditEvents(
                    code: code, from: nil, to: nil, limit: 500, afterID: cursor, beforeID: nil, newestFirst: false)
            } catch {
                throw RESTError(error)
            }
            for event in page where Self.messageKinds.contains(event.kind) {
                guard events.count < limit else { break }
                events.append(event)
            }
            cursor = events.count == limit ? events[limit - 1].id : (page.last?.id ?? cursor)
            if page.count < 500 {
                reachedEnd = true
                break
            }
            if events.count >= limit { break }
        }
        let contents: [Int64: StoredSessionContent]
        do {
            contents = try node.sessionContents(
                auditIDs: events.filter { APISessionContent.carried.contains($0.kind) }.map(\.id))
        } catch {
            throw RESTError(error)
        }
        let items = events.map { event in
            APIMessageEvent(
                event: APIAuditEvent(event),
                content: APISessionContent.carried.contains(event.kind)
                    ? .some(contents[event.id].map(APISessionContent.init)) : nil)
        }
        let next: Int64? = events.count == limit || !reachedEnd ? cursor : nil
        return .api(.ok, encoding: APIMessagePage(events: items, nextAfterID: next))
    }

    /// `GET /sessions/{code}/files`: the files the device sent, with their progress, oldest first.
    func listSessionFiles(_ call: RESTCall, for principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        let code = call["code"]
        _ = try visibleCode(code, for: principal)
        let events = try reportRows(code: code, from: nil, to: nil)
        let transfers = SessionFileTransfer.transfers(in: events)
        var headers = HTTPHeaders()
        if events.count >= Self.reportRowLimit { headers.add(name: "X-Report-Truncated", value: "true") }
        let kept: [Int64: StoredSessionContent]
        do {
            kept = try node.sessionContents(auditIDs: transfers.compactMap(\.fileID))
        } catch {
            throw RESTError(error)
        }
        return .api(
            .ok,
            encoding: APIFileList(
                files: transfers.map { transfer in
                    APIFileTransfer(
                        code: code, transfer: transfer, kept: transfer.fileID.map { kept[$0] != nil } ?? false)
                }), headers: headers)
    }

    /// `POST /sessions/{code}/files?name=`: sends the body (1 byte to 16 MiB; its `Content-Type` is the file's) to the
    /// device as a file (needs `file_share` granted); answers its transfer id once it is recorded and on its way.
    func uploadSessionFile(_ call: RESTCall, by principal: RESTPrincipal) async throws(RESTError) -> HTTPResponse {
        let request = call.request
        let code = call["code"]
        _ = try visibleCode(code, for: principal)
        guard let name = request.query("name"), (1...255).contains(name.utf8.count), name != ".", name != "..",
            !name.unicodeScalars.contains(where: Self.refusedInFileNames)
        else {
            throw RESTError.unprocessable(
                "name: the file's name, 1 to 255 bytes of UTF-8 without control or bidi characters, / or \\, not . or ..")
        }
        var contentType = request.headers["Content-Type"]
        if let type = contentType {
            guard (1...128).contains(type.utf8.count), type.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) })
            else { throw RESTError.unprocessable("Content-Type: at most 128 characters of printable ASCII") }
            if type == "application/octet-stream" { contentType = nil }
        }
        guard !request.body.isEmpty else { throw RESTError.unprocessable("the file is empty: send 1 byte to 16 MiB") }
        var transfer: UInt32 = 0
        do throws(SupporterNodeError) {
            transfer = try await node.sendFile(
                code: code, name: name, contentType: contentType, bytes: request.body, by: principal.actor)
        } catch {
            throw RESTError(error)
        }
        guard let info = node.code(code) else { throw RESTError(.notFound, "no session code \(code)") }
        return .api(.accepted, encoding: APIFileSent(transferID: transfer, session: APISession(info)))
    }

    /// What a file name sent to a device may not hold: control characters (C0, DEL, C1), path separators, and the
    /// bidi overrides and isolates that make a name read as another (`photo\u{202E}gpj.exe`).
    static func refusedInFileNames(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "/" || scalar == "\\"
            || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }

    /// `GET /sessions/{code}/files/{file}`: a file the device sent, as an attachment that never runs in a browser:
    /// `application/octet-stream`, `nosniff`, a sandboxing CSP, not cached. 404 for no such file of this code, 410
    /// once it is past its retention.
    func downloadSessionFile(_ call: RESTCall, for principal: RESTPrincipal) throws(RESTError) -> HTTPResponse {
        let code = call["code"]
        _ = try visibleCode(code, for: principal)
        guard let number = Self.integer(call["file"], default: 0), number > 0 else {
            throw RESTError(.notFound, "no file \(call["file"]) on session code \(code)")
        }
        let id = Int64(number)
        let file: StoredSessionContent?
        let row: AuditEvent?
        do {
            file = try node.sessionFile(auditID: id)
            row = try node.auditEvents(
                code: code, from: nil, to: nil, limit: 1, afterID: id - 1, beforeID: nil, newestFirst: false
            ).first
        } catch {
            throw RESTError(error)
        }
        guard let row, row.id == id,
            row.kind == .fileReceived || (row.kind == .messageSent && row.details["kind"] == "file")
        else {
            throw RESTError(.notFound, "no file \(id) on session code \(code)")
        }
        guard let file, file.content.code == code, case .file(let name, _, let bytes) = file.content.body else {
            throw RESTError(.gone, "file \(id) is no longer kept: the node keeps files for its message retention time")
        }
        let headers = HTTPHeaders([
            ("Content-Type", "application/octet-stream"),
            ("Content-Disposition", ContentDisposition.attachment(fileName: name)),
            ("X-Content-Type-Options", "nosniff"),
            ("Content-Security-Policy", "default-src 'none'; sandbox"),
            ("Cache-Control", "no-store"),
        ])
        return HTTPResponse(status: .ok, headers: headers, body: bytes)
    }
}

/// `MessageEvent`: a message or file row of the audit trail with its content (null once no longer kept; absent on
/// rows that carry none: deliveries, progress).
struct APIMessageEvent: Encodable {
    let event: APIAuditEvent
    let content: APISessionContent??

    enum CodingKeys: String, CodingKey { case content }

    func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let content { try container.encode(content, forKey: .content) }
    }
}

/// `MessagePage`: the answer of `GET /sessions/{code}/messages`.
struct APIMessagePage: Encodable {
    let events: [APIMessageEvent]
    let nextAfterID: Int64?

    enum CodingKeys: String, CodingKey { case events, nextAfterID = "next_after_id" }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(events, forKey: .events)
        try container.encode(nextAfterID, forKey: .nextAfterID)
    }
}

/// `FileTransfer`: one file the device sent.
struct APIFileTransfer: Encodable {
    let code: String
    let transfer: SessionFileTransfer
    /// Whether its bytes are still kept (a download works).
    let kept: Bool

    enum CodingKeys: String, CodingKey {
        case transferID = "transfer_id", name, size, received, state, startedAt = "started_at"
        case finishedAt = "finished_at", fileID = "file_id", contentType = "content_type", download, direction
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(transfer.transferID, forKey: .transferID)
        try container.encode(transfer.name, forKey: .name)
        try container.encode(transfer.size, forKey: .size)
        try container.encode(transfer.received, forKey: .received)
        try container.encode(transfer.state.rawValue, forKey: .state)
        try container.encode(RESTTime.format(transfer.startedAt), forKey: .startedAt)
        try container.encode(transfer.finishedAt.map(RESTTime.format), forKey: .finishedAt)
        try container.encode(transfer.fileID, forKey: .fileID)
        try container.encode(transfer.contentType, forKey: .contentType)
        try container.encode(transfer.direction.rawValue, forKey: .direction)
        try container.encode(
            kept ? transfer.fileID.map { "/api/v1/sessions/\(code)/files/\($0)" } : nil, forKey: .download)
    }
}

/// `FileSent`: the answer of `POST /sessions/{code}/files`.
struct APIFileSent: Encodable {
    let transferID: UInt32
    let session: APISession

    enum CodingKeys: String, CodingKey { case transferID = "transfer_id", session }
}

/// `FileList`: the answer of `GET /sessions/{code}/files`.
struct APIFileList: Encodable {
    let files: [APIFileTransfer]
}
