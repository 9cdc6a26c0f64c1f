extension DeviceSessionMachine {
    /// Something the app asked that the current state does not allow; nothing was sent. (``SessionRefusal``, shared by both machines and the channel.)
    public typealias Refusal = SessionRefusal
}
