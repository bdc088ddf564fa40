import Foundation

/// End-to-end throughput of no-op jobs: enqueue, run, result read.
extension Repetition {
    /// Producer and worker at once: jobs/s from the first publish to the last result, after a warm-up.
    func concurrentThroughput(of side: any BenchSide, prefetch: Int) throws -> [String: Double] {
        let scenario = "tp\(prefetch)c"
        let queue = name(side, scenario)
        let count = options.jobs(atPrefetch: prefetch)
        return try withWorker(side, queue: queue, prefetch: prefetch) { _ in
            let warmUp = name(side, scenario + "w") + "-"
            _ = try runJobs(side, ids: BenchJobs.ids(warmUp, count: max(count / 10, 1)), queue: queue, idPrefix: warmUp)
            let idPrefix = name(side, scenario + "m") + "-"
            let run = try runJobs(side, ids: BenchJobs.ids(idPrefix, count: count), queue: queue, idPrefix: idPrefix)
            let jobsPerSecond = Double(count) / (run.span.last - run.start).seconds
            return [FigureCatalog.concurrentThroughput(prefetch): jobsPerSecond]
        }
    }

    /// Draining a pre-filled queue: jobs/s between the first and the last result, so the worker's start-up
    /// does not count.
    func drainThroughput(of side: any BenchSide, prefetch: Int) throws -> [String: Double] {
        let scenario = "tp\(prefetch)d"
        let queue = name(side, scenario)
        let count = options.jobs(atPrefetch: prefetch) + 1
        let idPrefix = queue + "-"
        try side.declare(queue, admin: admin)
        try side.publish(BenchJobs.ids(idPrefix, count: count), to: queue)
        let collector = try ResultCollector(
            broker: broker, source: side.resultSource, prefix: idPrefix, expected: count)
        do {
            return try withWorker(side, queue: queue, prefetch: prefetch, declared: true) { _ in
                let span = try collector.waitForAll(timeout: Self.timeout(forJobs: count))
                let jobsPerSecond = Double(count - 1) / (span.last - span.first).seconds
                return [FigureCatalog.drainThroughput(prefetch): jobsPerSecond]
            }
        } catch {
            collector.stop()
            throw error
        }
    }
}
