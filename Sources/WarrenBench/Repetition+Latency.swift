import Foundation
import Warren

/// Latency one job at a time: the round trip of a no-op job, and (Warren) the cancellation of an executing one.
extension Repetition {
    /// Round trips, then for Warren cancellations, on one worker of prefetch 1.
    func latency(of side: any BenchSide) throws -> [String: Double] {
        let queue = name(side, "lat")
        let idPrefix = queue + "-"
        return try withWorker(side, queue: queue, prefetch: 1) { _ in
            let collector = try ResultCollector(
                broker: broker, source: side.resultSource, prefix: idPrefix, keepsArrivals: true)
            defer { collector.stop() }
            var samples: [Double] = []
            let warmUp = max(options.latencySamples / 10, 10)
            for index in 0..<(warmUp + options.latencySamples) {
                let id = "\(idPrefix)\(index)"
                let start = ContinuousClock.now
                try side.publish([id], to: queue)
                let arrival = try collector.arrival(of: id, timeout: .seconds(30))
                if index >= warmUp { samples.append((arrival.instant - start).milliseconds) }
            }
            var figures = [
                FigureCatalog.latencyP50: Statistics.percentile(0.5, of: samples),
                FigureCatalog.latencyP90: Statistics.percentile(0.9, of: samples),
                FigureCatalog.latencyP99: Statistics.percentile(0.99, of: samples),
            ]
            if let warren = side as? WarrenSide {
                let cancellations = try cancellationLatencies(warren, queue: queue, idPrefix: idPrefix, collector)
                figures[FigureCatalog.cancellationP50] = Statistics.percentile(0.5, of: cancellations)
                figures[FigureCatalog.cancellationP99] = Statistics.percentile(0.99, of: cancellations)
            } else {
                // The floor for a cancellation: one message to the worker and one back, as the raw round trip.
                figures[FigureCatalog.cancellationP50] = figures[FigureCatalog.latencyP50]
                figures[FigureCatalog.cancellationP99] = figures[FigureCatalog.latencyP99]
            }
            return figures
        }
    }

    /// Milliseconds from publishing a cancellation of an executing `sum` (which checks every millisecond) to the
    /// arrival of its `cancelled` result. A sample whose job had not started yet is thrown away and the wait
    /// before cancelling grows.
    private func cancellationLatencies(
        _ warren: WarrenSide, queue: String, idPrefix: String, _ collector: ResultCollector
    ) throws -> [Double] {
        var samples: [Double] = []
        var wait = 0.05
        var attempt = 0
        while samples.count < options.cancellations {
            attempt += 1
            guard attempt <= options.cancellations * 3 else {
                throw BenchError(
                    "\(attempt - 1) cancellations reached jobs that had not started yet; is the worker slow?")
            }
            let id = "\(idPrefix)cancel\(attempt)"
            try warren.producer.enqueue(
                JobRequest(type: "sum", input: BenchJobs.longSum, queue: queue, replyTo: warren.resultQueue, id: id))
            // A random phase against the job's 1 ms checks.
            Thread.sleep(forTimeInterval: wait + Double.random(in: 0..<0.002))
            let start = ContinuousClock.now
            try warren.producer.cancel(jobIDs: [id])
            let arrival = try collector.arrival(of: id, timeout: .seconds(30))
            let result = try JobResult.decode(arrival.body)
            guard result.status == .cancelled else {
                throw BenchError("cancelled job \(id) ended \(result.status.rawValue)")
            }
            guard result.timings.startedAt != nil else {
                discardedCancellations += 1
                wait *= 1.5
                continue
            }
            samples.append((arrival.instant - start).milliseconds)
        }
        return samples
    }
}
