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

    /// What a figure is held to.
    private enum Goal {
        /// Warren's median over the plain raw client's: at least the limit for a figure where more is better, at
        /// most otherwise.
        case raw(Double)
        /// Warren's median over the design's floor's, the same way.
        case floor(Double)
        /// Warren's median itself, judged with Warren's other medians.
        case absolute(String, (Double, [String: Double]) -> Bool)
    }

    private struct Definition {
        let key: String
        let label: String
        let shortLabel: String
        let unit: String
        var higherIsBetter = false
        var goal: Goal?
        var note: String?
    }

    /// Why the raw client's and the floor's cancellation figures are their round trips.
    private static let cancellationNote = "raw and floor: the round trip, one message there and one back"

    private static func definitions(prefetches: [Int]) -> [Definition] {
        var list: [Definition] = []
        for (label, short, key) in [
            ("producer and worker at once", "at once", concurrentThroughput),
            ("draining a full queue", "draining", drainThroughput),
        ] as [(String, String, (Int) -> String)] {
            for prefetch in prefetches {
                list.append(
                    Definition(
                        key: key(prefetch), label: "throughput, \(label), prefetch \(prefetch)",
                        shortLabel: "jobs/s \(short), prefetch \(prefetch)", unit: "jobs/s", higherIsBetter: true,
                        goal: prefetch >= 10 ? .raw(0.85) : nil))
            }
        }
        list += [
            Definition(
                key: latencyP50, label: "round trip one job at a time, p50", shortLabel: "round trip p50 (ms)",
                unit: "ms", goal: .floor(1.1)),
            Definition(
                key: latencyP90, label: "round trip one job at a time, p90", shortLabel: "round trip p90 (ms)",
                unit: "ms"),
            Definition(
                key: latencyP99, label: "round trip one job at a time, p99", shortLabel: "round trip p99 (ms)",
                unit: "ms", goal: .floor(1.1)),
            Definition(
                key: cancellationP50, label: "cancel executing job → cancelled result, p50",
                shortLabel: "cancel → cancelled p50 (ms)", unit: "ms", note: cancellationNote),
            Definition(
                key: cancellationP99, label: "cancel executing job → cancelled result, p99",
                shortLabel: "cancel → cancelled p99 (ms)", unit: "ms",
                goal: .absolute("≤ 2 ms") { value, _ in value <= 2 },
                note: cancellationNote),
            Definition(
                key: workerCPU, label: "worker CPU per 1,000 no-op jobs", shortLabel: "worker CPU/1,000 jobs (ms)",
                unit: "ms", goal: .floor(1.3)),
            Definition(
                key: workerIdleRSS, label: "worker RSS, started, before any job", shortLabel: "worker RSS idle (MB)",
                unit: "MB"),
            Definition(
                key: workerRestRSS, label: "worker RSS at rest, after warm-up", shortLabel: "worker RSS at rest (MB)",
                unit: "MB", goal: .absolute("< 30 MB") { value, _ in value < 30 }),
            Definition(
                key: workerSoakRSS, label: "worker RSS after the soak jobs", shortLabel: "worker RSS after soak (MB)",
                unit: "MB",
                goal: .absolute("≤ rest + 2 MB") { value, medians in value <= (medians[workerRestRSS] ?? 0) + 2 }),
            Definition(
                key: workerPeakRSS, label: "worker peak RSS (VmHWM), any scenario", shortLabel: "worker peak RSS (MB)",
                unit: "MB"),
            Definition(
                key: producerCPU, label: "producer thread CPU per 1,000 jobs",
                shortLabel: "producer CPU/1,000 jobs (ms)", unit: "ms"),
            Definition(
                key: brokerCPU, label: "broker CPU per 1,000 jobs", shortLabel: "broker CPU/1,000 jobs (ms)",
                unit: "ms", goal: .raw(1.15)),
        ]
        return list
    }

    /// The figures for the samples measured, in report order; figures the raw client or Warren did not measure are
    /// left out. A figure held to the floor has no target when the floor was not measured.
    static func figures(from samples: [SideKind: [String: [Double]]], prefetches: [Int]) -> [BenchFigure] {
        let warrenMedians = (samples[.warren] ?? [:]).mapValues(Statistics.median)
        return definitions(prefetches: prefetches).compactMap { definition in
            guard let baseline = samples[.baseline]?[definition.key], let warren = samples[.warren]?[definition.key]
            else { return nil }
            let baselineSpread = Spread(samples: baseline)
            let floorSpread = samples[.floor]?[definition.key].map(Spread.init(samples:))
            let warrenSpread = Spread(samples: warren)
            let ratio = medianRatio(warrenSpread, to: baselineSpread)
            let floorRatio = floorSpread.map { medianRatio(warrenSpread, to: $0) }
            return BenchFigure(
                key: definition.key, label: definition.label, shortLabel: definition.shortLabel, unit: definition.unit,
                higherIsBetter: definition.higherIsBetter, baseline: baselineSpread, floor: floorSpread,
                warren: warrenSpread, ratio: ratio, floorRatio: floorRatio,
                target: definition.goal.flatMap {
                    target(
                        $0, of: definition, warren: warrenSpread.median, ratio: ratio, floorRatio: floorRatio,
                        medians: warrenMedians)
                },
                note: definition.note)
        }
    }

    private static func medianRatio(_ warren: Spread, to other: Spread) -> Double {
        other.median == 0 ? 0 : warren.median / other.median
    }

    /// The target of a figure with `goal`, judged on the medians; `nil` for a goal against a floor not measured.
    private static func target(
        _ goal: Goal, of definition: Definition, warren: Double, ratio: Double, floorRatio: Double?,
        medians: [String: Double]
    ) -> BenchFigure.Target? {
        let relation = definition.higherIsBetter ? "≥" : "≤"
        func judged(_ ratio: Double, _ limit: Double, _ side: String) -> BenchFigure.Target {
            BenchFigure.Target(
                goal: "\(relation) \(limit.formatted(.number.precision(.fractionLength(0...2))))x \(side)",
                isMet: definition.higherIsBetter ? ratio >= limit : ratio <= limit)
        }
        switch goal {
        case .raw(let limit):
            return judged(ratio, limit, "raw")
        case .floor(let limit):
            return floorRatio.map { judged($0, limit, "floor") }
        case .absolute(let text, let isMet):
            return BenchFigure.Target(goal: text, isMet: isMet(warren, medians))
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
