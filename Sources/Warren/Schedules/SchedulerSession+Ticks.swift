import Foundation
import Logging

/// Enqueueing the jobs of the ticks that are due.
extension SchedulerSession {
    /// A job queue that refused jobs: when to try it again, and how long the wait was.
    struct Retry {
        var at: Date
        var wait: Duration
    }

    /// The instant the scheduler's thread must wake at: the next tick, unless its queue waits for a retry.
    var nextWake: Date {
        configuration.schedules.compactMap { schedule in
            due[schedule.name].map { max($0, retries[schedule.queue]?.at ?? .distantPast) }
        }.min() ?? .distantFuture
    }

    /// The tick to enqueue next for a schedule dealt with up to `through`, after a time in which nothing enqueued
    /// its jobs (no scheduler ran, or its queue refused them): the latest tick missed, if any, else the next one.
    /// The missed ticks before the latest are skipped, said so, and recorded as dealt with, so that they are counted
    /// once.
    func catchUp(_ schedule: Schedule, through: Date, now: Date) -> Date? {
        let recurrence = schedule.recurrence
        guard let latest = recurrence.latestTick(after: through, notAfter: now) else {
            return recurrence.tick(after: through)
        }
        let skipped = recurrence.count(after: through, before: latest, limit: 100_000)
        if skipped > 0 {
            logger.warning(
                """
                skipped ticks missed while nothing enqueued them (no scheduler led, the leader was held up, or \
                their queue refused jobs); going on with the latest
                """,
                metadata: [
                    "schedule": "\(schedule.name)", "skipped": "\(skipped == 100_000 ? "100000+" : "\(skipped)")",
                    "after": "\(WireCoding.text(of: through))", "latest": "\(WireCoding.text(of: latest))",
                ])
            metrics.skipped(schedule.name, count: skipped)
            // Ticks are at least a second apart: every skipped one is at or before this instant, the latest after it.
            state.through[schedule.name] = latest.addingTimeInterval(-1)
        }
        return latest
    }

    /// Enqueues the job of every tick that is due, one batch (one confirm) per job queue, and records them in the
    /// state once the broker confirmed them. A schedule whose queue refused its jobs waits, with backoff, and then
    /// catches up (``catchUp``).
    func enqueueDue() throws {
        let now = Date()
        var byQueue: [String: [(schedule: Schedule, tick: Date)]] = [:]
        for schedule in configuration.schedules {
            guard let tick = due[schedule.name], tick <= now else { continue }
            if let retry = retries[schedule.queue], retry.at > now { continue }
            var latest: Date? = tick
            // Later ticks passed too (the leader was held up: its machine paused, a long confirm; or the queue
            // refused jobs for a while): only the latest of them is enqueued, the others skipped.
            if schedule.recurrence.latestTick(after: tick, notAfter: now) != nil {
                latest = catchUp(
                    schedule, through: state.through[schedule.name] ?? tick.addingTimeInterval(-1), now: now)
                due[schedule.name] = latest
            }
            guard let latest, latest <= now else { continue }
            byQueue[schedule.queue, default: []].append((schedule, latest))
        }
        for (queue, ticks) in byQueue.sorted(by: { $0.value.map(\.tick).min()! < $1.value.map(\.tick).min()! }) {
            // A batch may wait long for its confirm (a broker alarm): a stop asked for meanwhile ends the turn.
            if stopRequested() { throw SchedulerStopped() }
            try enqueue(ticks.sorted { $0.tick < $1.tick }, to: queue)
            try publishIfChanged()
        }
    }

    /// Enqueues the jobs of `ticks`, all for job `queue`, except those later than their schedule's `maxLateness`.
    private func enqueue(_ ticks: [(schedule: Schedule, tick: Date)], to queue: String) throws {
        var jobs: [(schedule: Schedule, tick: Date, request: JobRequest)] = []
        for (schedule, tick) in ticks {
            let now = Date()
            if let limit = schedule.maxLateness, now.timeIntervalSince(tick) > limit.seconds {
                logger.warning("skipped a tick missed by more than its maxLateness", metadata: metadata(schedule, tick))
                metrics.skipped(schedule.name, count: 1)
                dealtWith(schedule, tick: tick)
            } else {
                jobs.append((schedule, tick, schedule.request(for: tick, now: now)))
            }
        }
        // A unique job goes alone: a lock that is held refuses only its own tick.
        let unique = jobs.filter { $0.request.uniqueFor != nil }
        let plain = jobs.filter { $0.request.uniqueFor == nil }
        for batch in (plain.isEmpty ? [] : [plain]) + unique.map({ [$0] }) {
            guard try submit(batch, to: queue) else { return }
        }
    }

    /// Enqueues the jobs of one batch for job `queue`, and records their ticks in the state when that is done with
    /// them: `false` when the queue refused them, and they wait to be enqueued again.
    private func submit(_ jobs: [(schedule: Schedule, tick: Date, request: JobRequest)], to queue: String) throws
        -> Bool
    {
        do {
            try producer.enqueue(jobs.map(\.request))
        } catch let error as WarrenError where error.code == .duplicate {
            for (schedule, tick, _) in jobs {
                logger.info(
                    "skipped a tick: an earlier job of its key still holds the key's unique lock",
                    metadata: metadata(schedule, tick))
                metrics.skipped(schedule.name, count: 1)
                dealtWith(schedule, tick: tick)
            }
            return true
        } catch let error as WarrenError where error.code == .invalidConfiguration {
            // Jobs the producer refuses before publishing: they never can be.
            for (schedule, tick, _) in jobs {
                var metadata = metadata(schedule, tick)
                metadata["error"] = "\(error)"
                logger.error("the producer refused a tick's job; the tick is skipped", metadata: metadata)
                metrics.skipped(schedule.name, count: 1)
                dealtWith(schedule, tick: tick)
            }
            return true
        } catch let error as WarrenError {
            // The queue refuses (its node is down, it is exclusive to another connection, full, not permitted), the
            // connection failed, or the state directory cannot be used (`system`: a full disk): the others go on;
            // this queue's ticks wait, and the broker may have closed the producer's channel.
            let wait = min((retries[queue]?.wait ?? .milliseconds(500)) * 2, configuration.maxReconnectDelay)
            retries[queue] = Retry(at: Date().addingTimeInterval(wait.seconds), wait: wait)
            logger.warning(
                "cannot enqueue the jobs of job queue '\(queue)'; trying again later",
                metadata: [
                    "schedules": "\(jobs.map(\.schedule.name).joined(separator: ", "))", "error": "\(error)",
                    "wait": "\(wait)",
                ])
            try replaceProducer()
            return false
        }
        retries[queue] = nil
        for (schedule, tick, request) in jobs {
            var metadata = metadata(schedule, tick)
            metadata["job"] = "\(request.id)"
            logger.info("enqueued", metadata: metadata)
            metrics.enqueued(schedule.name)
            dealtWith(schedule, tick: tick)
        }
        return true
    }

    /// Records `tick` in the state; the schedule's next tick is the one after it, or the latest that passed
    /// meanwhile (the leader was held up: a paused machine, a long confirm), as when no scheduler ran.
    private func dealtWith(_ schedule: Schedule, tick: Date) {
        state.through[schedule.name] = tick
        due[schedule.name] = catchUp(schedule, through: tick, now: Date())
    }

    private func metadata(_ schedule: Schedule, _ tick: Date) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["schedule": "\(schedule.name)", "tick": "\(WireCoding.text(of: tick))"]
        let lateness = Date().timeIntervalSince(tick)
        if lateness >= 1 { metadata["late"] = "\(Int(lateness)) s" }
        return metadata
    }
}
