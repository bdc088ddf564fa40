import AMQP

/// A rate limit that every worker of a broker shares (``Worker/Configuration/fleetRateLimits``, `warren worker
/// --fleet-rate-limit TYPE=N/UNIT`), kept by the broker as a sliding window of *turns*.
///
/// The window is a durable classic queue that holds at most ``window(of:)``'s `turns` messages, each of which
/// expires after the window's `lifetime` (`x-max-length`, `x-overflow` `reject-publish`, `x-message-ttl`). A worker
/// takes a turn for a job by publishing a message there with publisher confirms: the broker refuses it (`basic.nack`)
/// while the window is full, and the job waits for a later turn. So at most `turns` jobs of the type start in any
/// `lifetime`, fleet-wide: one every `period / count` for limits up to twenty jobs a second (one turn, alive for
/// the interval), in windows of 100 ms or more for faster ones (``window(of:)``). Workers with the same limit share
/// a queue; one with another limit for the type uses a window of its own. See docs/wire-format.md §1 and the
/// DocC article *Limits*.
///
/// Thread safety: stateless.
package enum FleetRateLimit {
    /// The start of every window queue's name.
    package static let prefix = "warren.rate."
    /// The shortest spacing a window of one turn keeps: faster limits group turns in windows.
    static let shortestSpacingMilliseconds = 50
    /// The shortest window of several turns.
    static let shortestWindowMilliseconds = 100
    /// How long a window queue lives unused beyond its turns' lifetime, in milliseconds (a day), so that it never
    /// goes before its last turn; workers declare theirs again every hour while jobs wait.
    static let lease: Int64 = 86_400_000

    /// The window that keeps `limit`: how many turns it holds, and how long each lives, in milliseconds.
    ///
    /// At most `turns` jobs start in any `milliseconds`, so in any period at most `turns` × ⌈period ÷
    /// `milliseconds`⌉: the window is a whole fraction of the period (rounded up), `windows` of them, with
    /// ⌊count ÷ windows⌋ turns each, so that no period ever holds more than `count`. Down to a spacing of 50 ms a
    /// window holds one turn (`11/s`: `1per91ms`); faster, the most windows of at least 100 ms that keep 95 % of the
    /// limit (`40/s`: `4per100ms`; `999/s`: `99per100ms`), else the fewest that keep the most of it.
    package static func window(of limit: RateLimit) -> (turns: Int, milliseconds: Int) {
        let period = Int(limit.period / .milliseconds(1))
        let count = limit.count
        if period / count >= shortestSpacingMilliseconds { return (1, (period + count - 1) / count) }
        let most = max(period / shortestWindowMilliseconds, 1)
        var best = (windows: 1, turns: count)
        var closeEnough: (windows: Int, turns: Int)?
        for windows in 1...most {
            let turns = count / windows
            if windows * turns > best.windows * best.turns { best = (windows, turns) }
            if windows * turns * 20 >= count * 19 { closeEnough = (windows, turns) }
        }
        let chosen = closeEnough ?? best
        return (chosen.turns, (period + chosen.windows - 1) / chosen.windows)
    }

    /// The queue that keeps `limit` for operation type `type`: `warren.rate.TYPE.TURNSperMSms`.
    package static func queue(forType type: String, limit: RateLimit) -> String {
        let window = window(of: limit)
        return "\(prefix)\(type).\(window.turns)per\(window.milliseconds)ms"
    }

    /// What is wrong with `type` as the type of a fleet-wide rate limit, or `nil` when it is fine: its window
    /// queue's name must fit AMQP's 255 bytes.
    package static func problem(withType type: String, limit: RateLimit) -> String? {
        let length = queue(forType: type, limit: limit).utf8.count
        guard length > 255 else { return nil }
        return "operation type '\(type.prefix(40))…' is too long for a fleet-wide rate limit: its queue's name would "
            + "be \(length) bytes, and AMQP allows 255"
    }

    /// The arguments every worker declares the window queue of `limit` with.
    static func arguments(for limit: RateLimit) -> AMQPTable {
        let window = window(of: limit)
        return [
            "x-max-length": .int(Int64(window.turns)), "x-overflow": "reject-publish",
            "x-message-ttl": .int(Int64(window.milliseconds)),
            "x-expires": .int(Int64(window.milliseconds) + lease),
        ]
    }

    /// How long a worker whose turn was refused waits before it asks again: a quarter of the time between two
    /// turns, from 10 ms to 1 s.
    static func retryDelay(for limit: RateLimit) -> Duration {
        let window = window(of: limit)
        let quarter = Duration.milliseconds(window.milliseconds) / (4 * window.turns)
        return min(max(quarter, .milliseconds(10)), .seconds(1))
    }
}
