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
        public init(number: UInt64, payload: Payload, isAck: Bool) {
            self.number = number
            self.payload = payload
            self.isAck = isAck
        }
    }

    struct Entry {
        let number: UInt64
        /// `nil` once answered: answers to single publishes leave holes until the ones before them are answered.
        var payload: Payload?
    }

    /// Tracked publishes in number order, from ``head`` on; answered ones hold no payload.
    private var entries: [Entry] = []
    /// The first entry that may still wait.
    private var head = 0

    /// How many tracked publishes wait for an answer.
    public private(set) var count = 0

    /// Whether no tracked publish waits for an answer.
    public var isEmpty: Bool { count == 0 }

    /// An empty tracker.
    public init() {}

    /// Records that publish `number` waits for the broker's answer, with `payload`.
    ///
    /// Publishes are usually tracked in the order they go out. A number below one tracked before is put in its
    /// place, and a number tracked twice is answered twice, once for each payload.
    public mutating func track(_ number: UInt64, _ payload: Payload) {
        var index = entries.endIndex
        while index > head, entries[index - 1].number > number { index -= 1 }
        entries.insert(Entry(number: number, payload: payload), at: index)
        count += 1
    }

    /// Takes the broker's answer: to publish `number` alone, or with `multiple` to every publish up to it.
    /// - Parameter ack: `true` for `basic.ack`, `false` for `basic.nack`.
    /// - Returns: The tracked publishes the answer covers, in number order.
    public mutating func answer(upTo number: UInt64, multiple: Bool, ack: Bool) -> [Answer] {
        var answers: [Answer] = []
        answer(upTo: number, multiple: multiple, ack: ack) { answers.append($0) }
        return answers
    }

    /// Takes the broker's answer, as ``answer(upTo:multiple:ack:)`` does, and hands each tracked publish it covers
    /// to `body` in number order, without collecting them in an array.
    ///
    /// Each publish is taken out just before `body` sees it: when `body` throws, the ones after stay tracked.
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
                count -= 1
                try body(Answer(number: entries[index].number, payload: payload, isAck: ack))
            }
            index += 1
        }
    }

    /// Whether publish `number` is tracked and waits for its answer.
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
        let waiting = entries[head...].compactMap { entry in entry.payload.map { (entry.number, $0) } }
        entries = []
        head = 0
        count = 0
        return waiting
    }

    /// The index of the first entry from ``head`` whose number is `number` or more (binary search).
    private func firstIndex(notBelow number: UInt64) -> Int {
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
    private mutating func compact() {
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
