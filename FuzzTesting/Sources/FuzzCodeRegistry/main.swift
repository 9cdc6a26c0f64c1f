import Foundation
import SupporterCore
import SupportSession
import SupportWire
import SupporterModel

/// Arbitrary bytes as a sequence of registry events — connections opening and closing, REGISTERs with valid and
/// invalid tokens, commits and failed commits, session events, supporter commands, the clock — checking after each:
/// the registry's own invariants, a device with an unpunished valid token is never refused a free open code, refusal
/// audit rows stay within the per-source limit (plus aggregates), and nothing traps.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    RegistryDriver.run(UnsafeRawBufferPointer(start: start, count: count))
    return 0
}

enum RegistryDriver {
    static let codes = ["100-000-001", "100-000-002", "100-000-003"]
    static let addresses = ["198.51.100.1", "198.51.100.2", "203.0.113.9"]
    static let events: [SupporterSessionEvent] = [
        .connected(requestID: 1), .rejected(requestID: 1, reason: .rejectedByUser),
        .requestTimedOut(requestID: 1), .ended(reason: .endedByDevice, text: nil),
        .voipState(.started, text: nil),
    ]

    /// Refusals that count against the token (SPEC §13): the device's own failures.
    static func punishes(_ reason: ReasonCode) -> Bool {
        switch reason {
        case .invalidSessionCode, .sessionCodeClosed, .sessionCodeExpired, .rateLimited: true
        default: false
        }
    }

    static func fail(_ what: String) -> Never { fatalError("FUZZ FINDING: \(what)") }

    static func run(_ bytes: UnsafeRawBufferPointer) {
        var policy = CodeRegistry.Policy()
        policy.unauthenticatedPerAddress = 4
        policy.unauthenticatedTotal = 8
        policy.refusalsPerConnection = 3
        var registry = CodeRegistry(policy: policy)
        var now = Date(timeIntervalSince1970: 1_800_000_000)
        var refusalRows: [String: [Date]] = [:]
        var punishedTokens: Set<String> = []
        var index = 0
        func next() -> UInt8? {
            guard index < bytes.count else { return nil }
            defer { index += 1 }
            return bytes[index]
        }
        while let op = next(), index < 4096 {
            let argument = next() ?? 0
            let connection = ConnectionID(UInt64(argument % 12))
            let code = codes[Int(argument >> 4) % codes.count]
            switch op % 10 {
            case 0:
                _ = registry.connectionOpened(connection, address: addresses[Int(argument >> 2) % addresses.count], now: now)
            case 1:
                registry.connectionClosed(connection)
            case 2, 3:
                let token: String? = op & 0x10 == 0 ? nil : (op & 0x20 == 0 ? "t0" : "t1")
                let info = registry.info(code, now: now)
                let freeAndOpen = info?.state == .open && registry.holder(of: code) == nil
                let outcome = registry.register(
                    RegistrationAttempt(connection: connection, code: code, deviceTokenID: token, deviceName: "d"),
                    now: now)
                for case .audit(let event) in outcome.intents where event.details["what"] == "registration_refused" {
                    let source = event.details["source_address"] ?? "?"
                    // SPEC §13.1: at most 10 rows per source per minute, the source's own minute (it starts with
                    // a refusal and lasts at least 60 s; the next starts after it), not any 60 s: a span of 60 s
                    // overlaps at most two such minutes, so at most twice the allowance falls within it.
                    let recent = (refusalRows[source] ?? []).filter { now.timeIntervalSince($0) < 60 }
                    // Windows are fixed (they open with a source's first refusal), so any sliding minute overlaps at
                    // most two of them.
                    if recent.count >= 2 * policy.refusalAuditRowsPerSource {
                        fail("more than \(2 * policy.refusalAuditRowsPerSource) refusal rows for \(source) within a minute")
                    }
                    refusalRows[source] = recent + [now]
                }
                if case .refused(let refusal) = outcome, let token, !punishedTokens.contains(token), freeAndOpen,
                    refusal.reason == .rateLimited
                {
                    fail("a valid token was rate-limited by failures that were not its own")
                }
                if case .refused(let refusal) = outcome, let token, punishes(refusal.reason) {
                    punishedTokens.insert(token)
                }
            case 4:
                registry.registrationCommitted(connection, code: code)
            case 5:
                registry.registrationFailed(connection, code: code)
            case 6:
                _ = registry.sessionEvent(events[Int(argument) % events.count], on: connection, now: now)
            case 7:
                let record = SessionCodeRecord(
                    code: code, createdAt: now, validUntil: now.addingTimeInterval(Double(argument % 8) * 30))
                _ = try? registry.createCode(record, by: .local)
            case 8:
                switch argument % 3 {
                case 0: _ = try? registry.finishCode(code, closing: argument & 0x40 != 0, by: .local, now: now)
                case 1: _ = try? registry.deleteCode(code, by: .local, now: now)
                default:
                    _ = registry.requestSent(
                        code: code, requestID: 1, supporterName: "S", type: .screenShare, by: .local, now: now)
                }
            default:
                now = now.addingTimeInterval(Double(argument) / 4)
                _ = registry.tick(now: now)
            }
            if let violation = registry.invariantViolation() { fail(violation) }
        }
    }
}
