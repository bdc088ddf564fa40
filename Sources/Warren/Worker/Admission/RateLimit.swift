import Foundation

/// At most ``count`` jobs of an operation type started per ``period`` on one worker, evenly spaced: one every
/// `period / count`, as Celery's `rate_limit` spaces its tasks. Configured per type in
/// ``Worker/Configuration/rateLimits``, or with `warren worker --rate-limit TYPE=N/UNIT`.
///
/// Thread safety: immutable.
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    /// Jobs per ``period``: at least 1.
    public let count: Int
    /// The period: at least 1 s.
    public let period: Duration

    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for a count below 1, a period shorter than a second, or a
    ///   rate above 1,000 jobs a second (beyond it, a worker's loop cannot space jobs).
    public init(_ count: Int, per period: Duration) throws {
        guard count >= 1 else {
            throw WarrenError(.invalidConfiguration, "a rate limit's count is \(count); it must be at least 1")
        }
        guard period >= .seconds(1) else {
            throw WarrenError(.invalidConfiguration, "a rate limit's period is \(period); it must be at least 1 s")
        }
        guard period / count >= .milliseconds(1) else {
            throw WarrenError(
                .invalidConfiguration, "a rate limit of \(count) per \(period) is above 1,000 jobs a second")
        }
        self.count = count
        self.period = period
    }

    /// Reads `N/s`, `N/m`, `N/h` or `N/d` (per second, minute, hour or day), as `warren worker --rate-limit` takes it.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) naming what is wrong.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        let units: [Substring: Duration] = [
            "s": .seconds(1), "m": .seconds(60), "h": .seconds(3600), "d": .seconds(86_400),
        ]
        let digits: ClosedRange<Character> = "0"..."9"
        if parts.count == 2, units[parts[1]] != nil, !parts[0].isEmpty, parts[0].allSatisfy(digits.contains),
            Int(parts[0]) == nil
        {
            throw WarrenError(.invalidConfiguration, "rate limit '\(text)': the count is too large")
        }
        guard parts.count == 2, let count = Int(parts[0]), let period = units[parts[1]] else {
            throw WarrenError(
                .invalidConfiguration,
                "rate limit '\(text)': expected N/s, N/m, N/h or N/d (jobs per second, minute, hour or day)")
        }
        try self.init(count, per: period)
    }

    /// The least time between two jobs' starts.
    var interval: Duration { period / count }

    public var description: String {
        let unit = [86_400: "d", 3600: "h", 60: "m", 1: "s"][Int(period.components.seconds)]
        guard let unit, period.components.attoseconds == 0 else { return "\(count) per \(period)" }
        return "\(count)/\(unit)"
    }
}
