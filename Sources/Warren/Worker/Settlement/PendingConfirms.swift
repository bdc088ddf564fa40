/// Settlements waiting for the broker's confirms of publishes on the confirm channel, in the order of their confirm
/// numbers. Numbers only grow on a channel, so a settlement is appended at the end (or, to be safe, moved before
/// larger ones), and a confirm with `multiple` takes a prefix: no sorting or hashing per confirm.
///
/// A settlement that waits for several publishes (a failed job's dead-letter copy and its result) is in it once for
/// each.
///
/// Thread safety: confined to the worker's broker thread.
struct PendingConfirms {
    private var entries: [(number: UInt64, settlement: Settlement)] = []

    var isEmpty: Bool { entries.isEmpty }

    /// Records that `settlement` waits for the confirm of publish `number`.
    mutating func append(_ settlement: Settlement, awaiting number: UInt64) {
        var index = entries.endIndex
        while index > entries.startIndex, entries[index - 1].number > number { index -= 1 }
        entries.insert((number, settlement), at: index)
    }

    /// Takes the settlements that the broker's confirm of `tag` (and, with `multiple`, of every number below it)
    /// answers, in the order of their numbers, each with the number answered.
    mutating func confirmed(upTo tag: UInt64, multiple: Bool) -> [(number: UInt64, settlement: Settlement)] {
        guard multiple else {
            let answered = entries.filter { $0.number == tag }
            if !answered.isEmpty { entries.removeAll { $0.number == tag } }
            return answered
        }
        let count = entries.prefix { $0.number <= tag }.count
        defer { entries.removeFirst(count) }
        return Array(entries[..<count])
    }

    /// Takes every settlement still waiting: the connection, and the channel's confirms with it, is gone.
    mutating func removeAll() -> [Settlement] {
        defer { entries = [] }
        return entries.map(\.settlement)
    }
}
