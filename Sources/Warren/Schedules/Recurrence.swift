import Foundation

/// When a recurring job's ticks fall.
///
/// Thread safety: immutable.
public enum Recurrence: Sendable, Equatable, CustomStringConvertible {
    /// At the minutes a cron expression names, read on the wall clock of a time zone.
    case cron(CronExpression, TimeZone)
    /// At every multiple of an interval since the Unix epoch (`every: .seconds(30)` ticks at :00 and :30 of each
    /// minute), so that every scheduler of a broker agrees on the ticks whatever time it started. At least a second.
    case every(Duration)

    /// The shortest interval of ``every(_:)``.
    public static let shortestInterval = Duration.seconds(1)

    /// The first tick strictly after `date`, or `nil` if none comes within years.
    public func tick(after date: Date) -> Date? {
        switch self {
        case .cron(let expression, let zone):
            return expression.next(after: date, in: zone)
        case .every(let interval):
            let step = interval.seconds
            return Date(timeIntervalSince1970: ((date.timeIntervalSince1970 / step).rounded(.down) + 1) * step)
        }
    }

    /// The last tick at or before `now` and after `since`, or `nil` when none fell between them: the tick missed
    /// when no scheduler ran from `since` to `now`.
    ///
    /// Looks back from `now` in growing windows, so that a schedule of every minute missed for a year costs no more
    /// than one missed for an hour.
    public func latestTick(after since: Date, notAfter now: Date) -> Date? {
        guard let first = tick(after: since), first <= now else { return nil }
        if case .every(let interval) = self {
            let step = interval.seconds
            return Date(timeIntervalSince1970: (now.timeIntervalSince1970 / step).rounded(.down) * step)
        }
        for window in [3_600.0, 86_400, 32 * 86_400, 400 * 86_400, .infinity] {
            var tick = max(since, now.addingTimeInterval(-window))
            guard let found = self.tick(after: tick), found <= now else { continue }
            tick = found
            while let later = self.tick(after: tick), later <= now { tick = later }
            return tick
        }
        return first
    }

    /// How many ticks fall after `since` and before `end`, counting up to `limit`.
    public func count(after since: Date, before end: Date, limit: Int) -> Int {
        if case .every(let interval) = self, let first = tick(after: since), first < end {
            let step = interval.seconds
            return min(limit, Int(((end.timeIntervalSince1970 - first.timeIntervalSince1970) / step).rounded(.up)))
        }
        var count = 0
        var tick = since
        while count < limit, let next = self.tick(after: tick), next < end {
            count += 1
            tick = next
        }
        return count
    }

    public var description: String {
        switch self {
        case .cron(let expression, let zone):
            ["UTC", "GMT"].contains(zone.identifier) ? "cron \(expression)" : "cron \(expression) (\(zone.identifier))"
        case .every(let interval):
            "every \(interval.seconds.formatted(.number.grouping(.never))) s"
        }
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
