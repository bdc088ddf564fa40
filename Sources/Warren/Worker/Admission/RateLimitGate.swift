import Foundation

/// Rate limits (``Worker/Configuration/rateLimits``): a job of a rate-limited operation type waits in the worker for
/// its turn (``Throttle``), then goes on to its local queue, where the type's ``StartGate`` spaces the starts on the
/// queue's threads.
///
/// A waiting job holds its delivery unacknowledged and counts against the prefetch like any job the worker holds,
/// so that a worker never takes more of such jobs than it could start; it can be cancelled, paused or reach its
/// deadline like any job that has not started. The limit is this worker's own.
/// Thread safety: confined to the worker's broker thread.
final class RateLimitGate: AdmissionGate, WakesTheLoop {
    /// The waiting jobs and the next turn, by operation type.
    private var throttles: [String: Throttle]
    /// Where the operations of each type space their starts.
    private let startGates: [String: StartGate]

    init(limits: [String: RateLimit]) {
        throttles = limits.mapValues(Throttle.init)
        startGates = limits.mapValues { StartGate(interval: $0.interval) }
    }

    func admit(_ job: InFlightJob) throws -> AdmissionVerdict {
        guard throttles[job.descriptor.type] != nil else { return .pass }
        guard !throttles[job.descriptor.type]!.admit(job, at: .now) else { return .pass }
        job.operation.job.debug("waiting for its turn under its type's rate limit")
        return .hold
    }

    /// The waiting jobs whose turn came.
    func takeReleased() -> [(InFlightJob, AdmissionVerdict)] {
        let now = ContinuousClock.now
        var released: [(InFlightJob, AdmissionVerdict)] = []
        for type in throttles.keys where throttles[type]!.dueAt.map({ $0 <= now }) == true {
            for job in throttles[type]!.due(at: now) { released.append((job, .pass)) }
        }
        return released
    }

    /// When the next waiting job's turn comes, if one waits.
    var nextWake: ContinuousClock.Instant? {
        throttles.values.compactMap(\.dueAt).min()
    }

    /// Where the operations of `type` wait for their turn to start, if it is rate-limited.
    func startGate(for type: String) -> StartGate? {
        startGates[type]
    }

    /// Seconds from now until the next job of each type may start, for a fresh copy of a recycled worker.
    func nextTurns() -> [String: Double] {
        let now = ContinuousClock.now
        var turns: [String: Double] = [:]
        for (type, throttle) in throttles {
            let next = [throttle.nextTurn, startGates[type]?.nextTurn].compactMap { $0 }.max()
            if let next, next > now { turns[type] = (next - now) / .seconds(1) }
        }
        return turns
    }

    /// In a fresh copy of a recycled worker: the next turns come when the recycled process said, not at once.
    func keep(turns: [String: Double]) {
        let now = ContinuousClock.now
        for (type, seconds) in turns where throttles[type] != nil && seconds > 0 {
            // A turn is never further off than one interval.
            let next = now + min(.seconds(seconds), throttles[type]!.interval)
            throttles[type]!.nextTurn = next
            startGates[type]?.nextTurn = next
        }
    }
}
