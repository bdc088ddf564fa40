/// The publishes of one confirm channel that wait for the broker's answer, each with what its caller keeps for it.
///
/// ```swift
/// var tracker = ConfirmTracker<String>()
/// tracker.track(1, "job-a")
/// tracker.track(2, "job-b")
/// let answers = tracker.answer(upTo: 2, multiple: true, ack: true)  // job-a, then job-b
/// ```
///
/// The broker answers each publish once, with `basic.ack` or `basic.nack`. An answer with `multiple` covers every
/// publish up to its number; answers to single publishes may come in any order. Answers are handed back in number
/// order. Numbers that were never tracked, or were answered already, are ignored.
///
/// The broker numbers a channel's publishes from 1, again on each channel it opens: when a channel closes, take
/// what it left with ``removeAll()``.
///
/// Its hot paths are `@inlinable`, so that a client module specializes them for its payload: unspecialized, each
/// tracked publish would cost thousands of instructions of generic metadata lookups.
///
/// Thread safety: a value, confined to the thread that owns the channel.
public struct ConfirmTracker<Payload> {
    /// The broker's answer to one tracked publish.
    public struct Answer {
        /// The publish's sequence number on its channel.
        public let number: UInt64
        /// What the caller tracked the publish with.
        public let payload: Payload
        /// `true` for `basic.ack`: the broker took the message; `false` for `basic.nack`: it did not.
        public let isAck: Bool

        /// An answer to publish `number`.
        @inlinable
        public init(number: UInt64, payload: Payload, isAck: Bool) {
            self.number = number
            self.payload = payload
            self.isAck = isAck
        }
    }

    @usableFromInline
    struct Entry {
        @usableFromInline let number: UInt64
        /// `nil` once answered: answers to single publishes leave holes until the ones before them are answered.
        @usableFromInline var payload: Payload?

        @inlinable
        init(number: UInt64, payload: Payload?) {
            self.number = number
            self.payload = payload
        }
    }

    /// Tracked publishes in number order, from ``head`` on; answered ones hold no payload.
    @usableFromInline var entries: [Entry] = []
    /// The first entry that may still wait.
    @usableFromInline var head = 0
    /// How many tracked publishes wait for an answer.
    @usableFromInline var waiting = 0

    /// How many tracked publishes wait for an answer.
    @inlinable public var count: Int { waiting }

    /// Whether no tracked publish waits for an answer.
    @inlinable public var isEmpty: Bool { waiting == 0 }

    /// An empty tracker.
    @inlinable
    public init() {}

    /// Records that publish `number` waits for the broker's answer, with `payload`.
    ///
    /// Publishes are usually tracked in the order they go out. A number below one tracked before is put in its
    /// place, and a number tracked twice is answered twice, once for each payload.
    @inlinable
    public mutating func track(_ number: UInt64, _ payload: Payload) {
        waiting += 1
        var index = entries.endIndex
        while index > head, entries[index - 1].number > number { index -= 1 }
        if index == entries.endIndex {
            entries.append(Entry(number: number, payload: payload))
        } else {
            entries.insert(Entry(number: number, payload: payload), at: index)
        }
    }

    /// Takes the broker's answer: to publish `number` alone, or with `multiple` to every publish up to it.
    /// - Parameter ack: `true` for `basic.ack`, `false` for `basic.nack`.
    /// - Returns: The tracked publishes the answer covers, in number order.
    @inlinable
    public mutating func answer(upTo number: UInt64, multiple: Bool, ack: Bool) -> [Answer] {
        var answers: [Answer] = []
        answer(upTo: number, multiple: multiple, ack: ack) { answers.append($0) }
        return answers
    }

    /// Takes the broker's answer, as ``answer(upTo:multiple:ack:)`` does, and hands each tracked publish it covers
    /// to `body` in number order, without collecting them in an array.
    ///
    /// Each publish is taken out just before `body` sees it: when `body` throws, the ones after stay tracked.
    @inlinable
    public mutating func answer(
        upTo number: UInt64, multiple: Bool, ack: Bool, each body: (Answer) throws -> Void
    ) rethrows {
        defer {
            while head < entries.endIndex, entries[head].payload == nil { head += 1 }
            compact()
        }
        var index = multiple ? head : firstIndex(notBelow: number)
        while index < entries.endIndex, multiple ? entries[index].number <= number : entries[index].number == number {
            if let payload = entries[index].payload {
                entries[index].payload = nil
                waiting -= 1
                try body(Answer(number: entries[index].number, payload: payload, isAck: ack))
            }
            index += 1
        }
    }

    /// Whether publish `number` is tracked and waits for its answer.
    @inlinable
    public func isAwaiting(_ number: UInt64) -> Bool {
        var probe = firstIndex(notBelow: number)
        while probe < entries.endIndex, entries[probe].number == number {
            if entries[probe].payload != nil { return true }
            probe += 1
        }
        return false
    }

    /// Takes every publish that still waits, in number order: its channel closed, and no answer will come.
    public mutating func removeAll() -> [(number: UInt64, payload: Payload)] {
        let left = entries[head...].compactMap { entry in entry.payload.map { (entry.number, $0) } }
        entries = []
        head = 0
        waiting = 0
        return left
    }

    /// The index of the first entry from ``head`` whose number is `number` or more (binary search).
    @inlinable
    func firstIndex(notBelow number: UInt64) -> Int {
        var low = head
        var high = entries.endIndex
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].number < number {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }

    /// Drops the answered entries before ``head`` once they are many, and the larger part of the array.
    @inlinable
    mutating func compact() {
        if head == entries.endIndex {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }
}

extension ConfirmTracker: Sendable where Payload: Sendable {}
extension ConfirmTracker.Answer: Sendable where Payload: Sendable {}
extension ConfirmTracker.Entry: Sendable where Payload: Sendable {}
