/// A value that lives on one event loop: read and written only on that loop's thread, checked on every access — in
/// release builds too (as swift-nio's `NIOLoopBound`). It makes state confined to a loop `Sendable` by proof rather
/// than by a comment: a task or another thread that touches it stops the process with the loop's name instead of
/// racing.
///
/// Hand it to closures that run on the loop (``EventLoop/execute(_:)``, timers); any other thread may hold it and pass
/// it on, but not open it.
public final class LoopBound<Value>: @unchecked Sendable {
    // @unchecked: `storage` is read and written only through `value`, whose accessors check
    // `loop.preconditionInLoop()` first, so every access happens on the one thread of `loop`; `loop` is immutable.
    /// The loop the value lives on.
    public let loop: EventLoop
    private var storage: Value

    /// Binds `value` to `loop`. Made on the loop, so that even the first value is the loop's.
    public init(_ value: Value, loop: EventLoop) {
        loop.preconditionInLoop()
        self.loop = loop
        self.storage = value
    }

    /// Binds a value made off the loop (it must not be shared with anything else from then on).
    public init(handingOver value: sending Value, to loop: EventLoop) {
        self.loop = loop
        self.storage = value
    }

    /// The value; only on ``loop``.
    public var value: Value {
        get {
            loop.preconditionInLoop()
            return storage
        }
        _modify {
            loop.preconditionInLoop()
            yield &storage
        }
    }
}
