/// A dictionary by string key that keeps only the ``capacity`` keys added last: past it, the oldest is forgotten.
///
/// Thread safety: confined to the worker's broker thread, like the tables built on it.
struct BoundedDictionary<Value> {
    let capacity: Int
    private var values: [String: Value] = [:]
    private var order: [String] = []
    private var start = 0

    init(capacity: Int) {
        self.capacity = capacity
    }

    var isEmpty: Bool { values.isEmpty }

    subscript(key: String) -> Value? {
        values[key]
    }

    /// Sets `key`'s value; a key not there yet is the newest, and may push the oldest out.
    mutating func set(_ value: Value, for key: String) {
        guard values.updateValue(value, forKey: key) == nil else { return }
        order.append(key)
        guard order.count - start > capacity else { return }
        values[order[start]] = nil
        start += 1
        if start > capacity {
            order.removeFirst(start)
            start = 0
        }
    }
}
