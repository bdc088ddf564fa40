import Foundation

/// Every figure the benchmark reports: its key, label, unit and target, in report order.
enum FigureCatalog {
    static func concurrentThroughput(_ prefetch: Int) -> String { "throughput.concurrent.prefetch\(prefetch)" }
    static func drainThroughput(_ prefetch: Int) -> String { "throughput.drain.prefetch\(prefetch)" }
    static let latencyP50 = "latency.p50"
    static let latencyP90 = "latency.p90"
    static let latencyP99 = "latency.p99"
    static let cancellationP50 = "cancellation.p50"
    static let cancellationP99 = "cancellation.p99"
    static let workerCPU = "worker.cpuPer1000Jobs"
    static let workerIdleRSS = "worker.rssIdle"
    static let workerRestRSS = "worker.rssAtRest"
    static let workerSoakRSS = "worker.rssAfterSoak"
    static let workerPeakRSS = "worker.rssPeak"
    static let producerCPU = "producer.cpuPer1000Jobs"
    static let brokerCPU = "broker.cpuPer1000Jobs"

    private struct Definition {
        let key: String
        let label: String
        let unit: String
        var higherIsBetter = false
        var goal: String?
        /// Judges the medians: Warren's value, the ratio, and Warren's other figures.
        var isMet: ((Double, Double, [String: Double]) -> Bool)?
        var note: String?
    }

    private static func definitions(prefetches: [Int]) -> [Definition] {
        var list: [Definition] = []
        for (label, key) in [
            ("producer and worker at once", concurrentThroughput),
            ("draining a full queue", drainThroughput),
        ] as [(String, (Int) -> String)] {
            for prefetch in prefetches {
                let targeted = prefetch >= 10
                list.append(
                    Definition(
                        key: key(prefetch), label: "throughput, \(label), prefetch \(prefetch)", unit: "jobs/s",
                        higherIsBetter: true, goal: targeted ? "≥ 0.85x" : nil,
                        isMet: targeted ? { _, ratio, _ in ratio >= 0.85 } : nil))
            }
        }
        list += [
            Definition(
                key: latencyP50, label: "round trip one job at a time, p50", unit: "ms", goal: "≤ 1.2x",
                isMet: { _, ratio, _ in ratio <= 1.2 }),
            Definition(key: latencyP90, label: "round trip one job at a time, p90", unit: "ms"),
            Definition(
                key: latencyP99, label: "round trip one job at a time, p99", unit: "ms", goal: "≤ 1.5x",
                isMet: { _, ratio, _ in ratio <= 1.5 }),
            Definition(
                key: cancellationP50, label: "cancel executing job → cancelled result, p50", unit: "ms",
                note: "baseline: the raw round trip (one message there, one back)"),
            Definition(
                key: cancellationP99, label: "cancel executing job → cancelled result, p99", unit: "ms",
                goal: "< 10 ms", isMet: { value, _, _ in value < 10 },
                note: "baseline: the raw round trip (one message there, one back)"),
            Definition(
                key: workerCPU, label: "worker CPU per 1,000 no-op jobs", unit: "ms", goal: "≤ 3x",
                isMet: { _, ratio, _ in ratio <= 3 }),
            Definition(key: workerIdleRSS, label: "worker RSS, started, before any job", unit: "MB"),
            Definition(
                key: workerRestRSS, label: "worker RSS at rest, after warm-up", unit: "MB", goal: "< 30 MB",
                isMet: { value, _, _ in value < 30 }),
            Definition(
                key: workerSoakRSS, label: "worker RSS after the soak jobs", unit: "MB", goal: "flat (≤ rest + 2 MB)",
                isMet: { value, _, figures in value <= (figures[workerRestRSS] ?? 0) + 2 }),
            Definition(key: workerPeakRSS, label: "worker peak RSS (VmHWM), any scenario", unit: "MB"),
            Definition(key: producerCPU, label: "producer thread CPU per 1,000 jobs", unit: "ms"),
            Definition(key: brokerCPU, label: "broker CPU per 1,000 jobs", unit: "ms"),
        ]
        return list
    }

    /// The figures for the samples measured, in report order; figures nobody measured are left out.
    static func figures(from samples: [SideKind: [String: [Double]]], prefetches: [Int]) -> [BenchFigure] {
        let warrenMedians = (samples[.warren] ?? [:]).mapValues(Statistics.median)
        return definitions(prefetches: prefetches).compactMap { definition in
            guard let baseline = samples[.baseline]?[definition.key], let warren = samples[.warren]?[definition.key]
            else { return nil }
            let baselineSpread = Spread(samples: baseline)
            let warrenSpread = Spread(samples: warren)
            let ratio = baselineSpread.median == 0 ? 0 : warrenSpread.median / baselineSpread.median
            let target = definition.goal.map { goal in
                BenchFigure.Target(
                    goal: goal, isMet: definition.isMet?(warrenSpread.median, ratio, warrenMedians) ?? true)
            }
            return BenchFigure(
                key: definition.key, label: definition.label, unit: definition.unit,
                higherIsBetter: definition.higherIsBetter, baseline: baselineSpread, warren: warrenSpread,
                ratio: ratio, target: target, note: definition.note)
        }
    }

    /// The keys every run reports (the broker's CPU only with its process id).
    static func requiredKeys(prefetches: [Int]) -> [String] {
        definitions(prefetches: prefetches).map(\.key).filter { $0 != brokerCPU }
    }

    /// A value as the table prints it: jobs/s whole, milliseconds and megabytes with decimals.
    static func format(_ value: Double, key: String) -> String {
        if key.hasPrefix("throughput") { return value.formatted(.number.precision(.fractionLength(0))) }
        if key.contains("rss") { return value.formatted(.number.precision(.fractionLength(1))) }
        return value.formatted(.number.precision(.fractionLength(value < 10 ? 2 : 1)))
    }
}
