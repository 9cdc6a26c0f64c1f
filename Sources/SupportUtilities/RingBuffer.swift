/// A first-in, first-out queue with O(1) append and O(1) removal at the front (amortized), on one growable ring of
/// storage. Unbounded by itself: its owners state and enforce their bound (``count`` is O(1)).
///
/// Why not `Array.removeFirst()`: that moves every element left, so draining n queued elements costs O(n²) — the
/// outbox of one connection pipelining 200,000 frames took the node's loop for minutes that way.
public struct RingBuffer<Element> {
    private var storage: [Element?]
    private var head = 0
    public private(set) var count = 0

    public init(initialCapacity: Int = 16) {
        storage = Array(repeating: nil, count: max(1, initialCapacity))
    }

    public var isEmpty: Bool { count == 0 }

    /// The element that ``popFirst()`` would return, if any.
    public var first: Element? { count == 0 ? nil : storage[head] }

    public mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[(head + count) % storage.count] = element
        count += 1
    }

    /// Removes and returns the oldest element.
    @discardableResult
    public mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        count -= 1
        if count == 0 { head = 0 }
        return element
    }

    /// Removes every element, returning them oldest first; the storage shrinks back to its initial size.
    public mutating func removeAll() -> [Element] {
        var out: [Element] = []
        out.reserveCapacity(count)
        while let element = popFirst() { out.append(element) }
        if storage.count > 16 { storage = Array(repeating: nil, count: 16) }
        return out
    }

    private mutating func grow() {
        var bigger: [Element?] = Array(repeating: nil, count: storage.count * 2)
        for index in 0..<count { bigger[index] = storage[(head + index) % storage.count] }
        storage = bigger
        head = 0
    }
}

extension RingBuffer: Sendable where Element: Sendable {}
