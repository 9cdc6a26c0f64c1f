public import Foundation
import SupportUtilities

/// One entry of the supporter node's audit log: append-only, kept in ``SessionStore``.
public struct AuditEvent: Sendable, Hashable {
    /// What happened. A string-backed struct rather than an enum, so a log written by a newer node still reads.
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let codeCreated = Kind(rawValue: "code_created")
        public static let codeUpdated = Kind(rawValue: "code_updated")
        public static let codeClosed = Kind(rawValue: "code_closed")
        public static let codeExpired = Kind(rawValue: "code_expired")
        public static let codeDeleted = Kind(rawValue: "code_deleted")
        public static let deviceOnline = Kind(rawValue: "device_online")
        public static let deviceOffline = Kind(rawValue: "device_offline")
        public static let requestSent = Kind(rawValue: "request_sent")
        public static let requestAllowed = Kind(rawValue: "request_allowed")
        public static let requestRejected = Kind(rawValue: "request_rejected")
        public static let requestAborted = Kind(rawValue: "request_aborted")
        public static let requestTimedOut = Kind(rawValue: "request_timed_out")
        public static let sessionStarted = Kind(rawValue: "session_started")
        public static let sessionEnded = Kind(rawValue: "session_ended")
        public static let voipState = Kind(rawValue: "voip_state")
        public static let error = Kind(rawValue: "error")
        /// The code's rules removed a feature from a request or refused an ask (SPEC §15.3).
        public static let featureDenied = Kind(rawValue: "feature_denied")
        /// The grant in effect as a session started.
        public static let featuresGranted = Kind(rawValue: "features_granted")
        /// The device granted an ask.
        public static let featureGranted = Kind(rawValue: "feature_granted")
        /// The device refused an ask.
        public static let featureRefused = Kind(rawValue: "feature_refused")
        /// The device revoked a grant.
        public static let featureRevoked = Kind(rawValue: "feature_revoked")
        /// The device's link was lost; its session is kept for the grace period (SPEC §15.5).
        public static let deviceReconnecting = Kind(rawValue: "device_reconnecting")
        /// The device resumed on a new connection.
        public static let deviceResumed = Kind(rawValue: "device_resumed")
        /// A supporter asked the device for a feature during the session (SPEC §15.3).
        public static let featureAsked = Kind(rawValue: "feature_asked")
        /// The supporter withdrew a pending ask (FEATURE_WITHDRAW); the device's answer follows.
        public static let featureAskWithdrawn = Kind(rawValue: "feature_ask_withdrawn")
        /// A chat line or application message went to the device (its content is kept apart, for the retention
        /// time: ``SessionContent``).
        public static let messageSent = Kind(rawValue: "message_sent")
        /// A chat line or application message came from the device (content kept apart, as for `message_sent`).
        public static let messageReceived = Kind(rawValue: "message_received")
        /// The device acknowledged a message the supporter sent.
        public static let messageDelivered = Kind(rawValue: "message_delivered")
        /// The device refused a message the supporter sent.
        public static let messageRefused = Kind(rawValue: "message_refused")
        /// The session ended (or a grant was revoked) with messages the supporter sent not acknowledged.
        public static let messagesUndelivered = Kind(rawValue: "messages_undelivered")
        /// Part of a file from the device arrived: at the first part, then at each quarter of its size.
        public static let fileProgress = Kind(rawValue: "file_progress")
        /// A whole file from the device arrived (its bytes are kept apart, as for `message_sent`).
        public static let fileReceived = Kind(rawValue: "file_received")
        /// The device acknowledged every part of a supporter's file.
        public static let fileDelivered = Kind(rawValue: "file_delivered")
        /// The device refused a part of a supporter's file; the rest was not sent.
        public static let fileRefused = Kind(rawValue: "file_refused")
        // Accounts, sign-in and API tokens.
        public static let tokenIssued = Kind(rawValue: "token_issued")
        public static let tokenRevoked = Kind(rawValue: "token_revoked")
        public static let accountCreated = Kind(rawValue: "account_created")
        public static let accountChanged = Kind(rawValue: "account_changed")
        public static let signedIn = Kind(rawValue: "signed_in")
        public static let signedOut = Kind(rawValue: "signed_out")
        public static let signInFailed = Kind(rawValue: "sign_in_failed")
        // Webhook endpoints (an admin's changes; deliveries are in each endpoint's delivery log, not here).
        public static let webhookCreated = Kind(rawValue: "webhook_created")
        public static let webhookChanged = Kind(rawValue: "webhook_changed")
        public static let webhookDeleted = Kind(rawValue: "webhook_deleted")
        public static let webhookRedelivered = Kind(rawValue: "webhook_redelivered")

        /// Every kind a webhook endpoint may subscribe to: the session kinds of ``known`` and the administrative ones.
        public static let subscribable: [Kind] =
            known + [
                .tokenIssued, .tokenRevoked, .accountCreated, .accountChanged, .signedIn, .signedOut, .signInFailed,
                .webhookCreated, .webhookChanged, .webhookDeleted, .webhookRedelivered,
            ]

        /// Every kind this version of the node writes.
        public static let known: [Kind] = [
            .codeCreated, .codeUpdated, .codeClosed, .codeExpired, .codeDeleted, .deviceOnline, .deviceOffline,
            .requestSent, .requestAllowed, .requestRejected, .requestAborted, .requestTimedOut, .sessionStarted,
            .sessionEnded, .voipState, .error, .featureDenied, .featuresGranted, .featureGranted, .featureRefused,
            .featureRevoked, .deviceReconnecting, .deviceResumed, .featureAsked, .messageSent, .messageReceived,
            .messageDelivered, .messageRefused, .messagesUndelivered, .fileProgress, .fileReceived, .fileDelivered,
            .fileRefused, .featureAskWithdrawn,
        ]

        public var description: String { rawValue }
    }

    /// The id the store gave the event: increasing in the order events were stored; 0 until stored.
    public var id: Int64
    /// When it happened (stored as Unix milliseconds).
    public var time: Date
    /// The session code it concerns, if any.
    public var code: String?
    public var kind: Kind
    /// Free-form facts (supporter name, reason, …); stored as JSON text with sorted keys.
    public var details: [String: String]

    public init(id: Int64 = 0, time: Date, code: String? = nil, kind: Kind, details: [String: String] = [:]) {
        self.id = id
        self.time = time
        self.code = code
        self.kind = kind
        self.details = details
    }
}
