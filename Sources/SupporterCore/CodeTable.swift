import Foundation
import SupportWire
import SupportUtilities

/// The registry's codes by code, with an index of when each code whose expiry is not yet recorded runs out, so that
/// the once-a-second expiry tick visits the codes that are due instead of every code (a scan of every code under the
/// supporter node's lock would stall, each second, every loop that needs the lock: ~125 µs at 10,000 codes).
///
/// Every change goes through the subscript, which keeps the index: a code is indexed again when its `validUntil`
/// changes or its expiry stops being recorded. The index is lazy — an entry for a code since removed, extended or
/// recorded stays until its time comes, and is then skipped — and is rebuilt when stale entries outnumber live ones.
struct CodeTable: Sendable {
    private var entries: [String: CodeRegistry.CodeEntry] = [:]
    /// Earliest `validUntil` first: a binary min-heap of (time, code).
    private var heap: [(at: Date, code: String)] = []
    /// The `validUntil` each code is indexed at (nil: not indexed — recorded, or reported as due).
    private var indexed: [String: Date] = [:]
    /// Codes reported as due whose expiry is not yet recorded: reported again at each ``due(now:)`` until it is (a
    /// code with a device on it waits for the node to end the session), or until the code changes.
    private var overdue: Set<String> = []

    subscript(code: String) -> CodeRegistry.CodeEntry? {
        get { entries[code] }
        _modify {
            yield &entries[code]
            reindex(code)
        }
    }

    var values: Dictionary<String, CodeRegistry.CodeEntry>.Values { entries.values }
    var keys: Dictionary<String, CodeRegistry.CodeEntry>.Keys { entries.keys }

    /// Every code and its entry, in no order (for whole-table checks, not per tick).
    var all: [String: CodeRegistry.CodeEntry] { entries }

    /// Codes whose validity ran out by `now` and whose expiry is not recorded, sorted. A code stays due (reported at
    /// every call) until its expiry is recorded, it is removed, or its `validUntil` moves past `now`.
    mutating func due(now: Date) -> [String] {
        while let first = heap.first, first.at <= now {
            popFirst()
            guard indexed[first.code] == first.at else { continue }  // stale: the code changed since
            indexed[first.code] = nil
            overdue.insert(first.code)
        }
        overdue = overdue.filter { code in
            guard let entry = entries[code] else { return false }
            return !entry.expiryRecorded && entry.record.validUntil <= now
        }
        return overdue.sorted()
    }

    private mutating func reindex(_ code: String) {
        guard let entry = entries[code], !entry.expiryRecorded else {
            indexed[code] = nil
            overdue.remove(code)
            return
        }
        let at = entry.record.validUntil
        guard indexed[code] != at else { return }
        indexed[code] = at
        push((at, code))
        if heap.count > 2 * indexed.count + 1_024 { rebuild() }
    }

    /// Drops the stale entries: one entry per indexed code.
    private mutating func rebuild() {
        heap = indexed.map { (at: $0.value, code: $0.key) }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private static func before(_ a: (at: Date, code: String), _ b: (at: Date, code: String)) -> Bool {
        (a.at, a.code) < (b.at, b.code)
    }

    private mutating func push(_ element: (at: Date, code: String)) {
        heap.append(element)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popFirst() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var smallest = left
            if left + 1 < heap.count, Self.before(heap[left + 1], heap[left]) { smallest = left + 1 }
            guard Self.before(heap[smallest], heap[parent]) else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
