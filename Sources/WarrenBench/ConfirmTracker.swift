/// Which publishes on a confirm channel the broker has confirmed, from `basic.ack` frames that may cover many
/// (`multiple`) or arrive out of order.
///
/// Thread safety: a value confined to the thread that owns the channel.
struct ConfirmTracker {
    /// Publishes so far; the broker numbers them from 1.
    private(set) var published: UInt64 = 0
    /// Every publish up to this number is confirmed.
    private(set) var confirmedThrough: UInt64 = 0
    /// Confirmed publishes above ``confirmedThrough``.
    private var ahead: Set<UInt64> = []

    /// Counts a publish and returns its number.
    mutating func publish() -> UInt64 {
        published += 1
        return published
    }

    /// Records a `basic.ack` from the broker.
    mutating func confirm(_ tag: UInt64, multiple: Bool) {
        if multiple {
            confirmedThrough = max(confirmedThrough, tag)
        } else {
            ahead.insert(tag)
        }
        while ahead.remove(confirmedThrough + 1) != nil { confirmedThrough += 1 }
        if !ahead.isEmpty { ahead = ahead.filter { $0 > confirmedThrough } }
    }

    /// Whether publish `number` is confirmed.
    func isConfirmed(_ number: UInt64) -> Bool {
        number <= confirmedThrough || ahead.contains(number)
    }

    /// Publishes not yet confirmed.
    var outstanding: Int {
        Int(published - confirmedThrough) - ahead.count
    }
}
