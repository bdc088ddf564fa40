import Foundation
import Warren

/// Jobs started, succeeded and failed per second over the last minutes, for the fleet and per job queue, counted
/// from the results the dashboard reads: a job counts as started in the second its result says it started.
///
/// Thread safety: a value; ``ResultFeed`` keeps it under its lock.
struct ThroughputHistory: Sendable {
    /// Counts of one second.
    struct Counts: Sendable, Equatable {
        var started = 0
        var succeeded = 0
        var failed = 0
        var cancelled = 0
    }

    /// Rates per second over a window.
    struct Rates: Sendable, Equatable {
        var started = 0.0
        var succeeded = 0.0
        var failed = 0.0
    }

    /// How many seconds it keeps: 15 minutes.
    static let kept = 900

    /// Per job queue (`""` for the whole fleet), per whole second since 1970.
    private var seconds: [String: [Int: Counts]] = [:]

    /// Counts `result`, for the fleet and for `queue` when known.
    mutating func record(_ result: JobResult, queue: String?, now: Date = Date()) {
        let oldest = Int(now.timeIntervalSince1970) - Self.kept
        for name in [""] + (queue.map { [$0] } ?? []) {
            if let started = result.timings.startedAt.map(Self.second), started > oldest {
                seconds[name, default: [:]][started, default: Counts()].started += 1
            }
            let finished = Self.second(result.timings.finishedAt ?? now)
            guard finished > oldest else { continue }
            switch result.status {
            case .succeeded: seconds[name, default: [:]][finished, default: Counts()].succeeded += 1
            case .failed: seconds[name, default: [:]][finished, default: Counts()].failed += 1
            case .cancelled: seconds[name, default: [:]][finished, default: Counts()].cancelled += 1
            }
        }
    }

    /// Forgets seconds older than ``kept``.
    mutating func trim(now: Date = Date()) {
        let oldest = Int(now.timeIntervalSince1970) - Self.kept
        for name in seconds.keys {
            seconds[name] = seconds[name]?.filter { $0.key > oldest }
            if seconds[name]?.isEmpty == true { seconds[name] = nil }
        }
    }

    /// The rates over the `window` seconds before `now`, for `queue` or the fleet (`nil`).
    func rates(over window: Int, queue: String? = nil, now: Date = Date()) -> Rates {
        guard let counts = seconds[queue ?? ""], window > 0 else { return Rates() }
        let end = Int(now.timeIntervalSince1970)
        var total = Counts()
        for second in (end - window)..<end {
            guard let count = counts[second] else { continue }
            total.started += count.started
            total.succeeded += count.succeeded
            total.failed += count.failed
        }
        let span = Double(window)
        return Rates(
            started: Double(total.started) / span, succeeded: Double(total.succeeded) / span,
            failed: Double(total.failed) / span)
    }

    private static func second(_ date: Date) -> Int {
        Int(date.timeIntervalSince1970.rounded(.down))
    }
}
