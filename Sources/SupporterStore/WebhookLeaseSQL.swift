/// The statement that moves a sender's lease after an attempt, the same in every engine: extended to the new time only
/// while the endpoint is still enabled with the URL and secret the sender holds, else ended (released) at once, so a
/// disabled, changed or deleted endpoint gets nothing more from a batch leased before the change. It answers the
/// lease's owner afterwards: the sender goes on only when that is itself. Parameters: 1 the endpoint's id, 2 the owner,
/// 3 the new end of the lease (null: release), 4 the URL, 5 the secret.
public enum WebhookLeaseSQL {
    /// `parameter(n)` spells parameter n in the engine's dialect (`?3`, `$3::bigint`); `enabled` is the test that the
    /// endpoint is enabled (`enabled = 1`, `enabled`).
    public static func moveLease(parameter: (Int) -> String, enabled: String) -> String {
        let keeps = "\(parameter(3)) IS NOT NULL AND \(enabled) AND url = \(parameter(4)) AND secret = \(parameter(5))"
        return """
            UPDATE webhook_endpoints SET
                lease_until = CASE WHEN \(keeps) THEN \(parameter(3)) ELSE NULL END,
                lease_owner = CASE WHEN \(keeps) THEN \(parameter(2)) ELSE NULL END
            WHERE id = \(parameter(1)) AND lease_owner = \(parameter(2))
            RETURNING lease_owner
            """
    }
}
