public import SupporterStore
import Foundation
public import SupporterCore
import SupportUtilities

/// The resume records the previous process left (``UnresumedSession``).
extension SessionStore {
    /// Every stored resume record, by code, with when its session became active (its code's last
    /// `session_started` row) for a record of an active session. A record that does not decode is skipped: its
    /// session cannot be resumed, and it is deleted with the code's next claim or release.
    public func unresumedSessions() throws(StoreError) -> [UnresumedSession] {
        try perform("load resume records") {
            (connection: borrowing SQLiteDatabase.Connection) throws(StoreError) -> [UnresumedSession] in
            let statement = try connection.prepare(
                """
                SELECT r.code, r.state,
                    (SELECT max(a.time) FROM audit_events a WHERE a.code = r.code AND a.kind = 'session_started')
                FROM resume_records r ORDER BY r.code
                """)
            var sessions: [UnresumedSession] = []
            while try statement.step() {
                guard let code = statement.text(at: 0), let text = statement.text(at: 1),
                    let state = StoredResumeState.decode(text), state.code == code
                else { continue }
                let since = state.phase == "active" ? statement.int64(at: 2).map(Date.init(unixMilliseconds:)) : nil
                sessions.append(UnresumedSession(state: state, activeSince: since))
            }
            return sessions
        }
    }
}

