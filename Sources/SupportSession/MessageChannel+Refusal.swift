extension MessageChannel {
    /// A send the channel refused; nothing was queued. (``SessionRefusal``, shared by both machines and the channel.)
    public typealias Refusal = SessionRefusal
}
