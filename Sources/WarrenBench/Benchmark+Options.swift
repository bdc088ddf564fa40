extension Benchmark {
    /// How much to measure. ``full`` for figures worth publishing, ``quick`` for a check that it all works.
    public struct Options: Sendable, Codable {
        /// Repetitions of the whole set; medians and spreads are taken over them. Default: 3.
        public var repetitions = 3
        /// Jobs per throughput measurement at prefetch 10 and 100 (a tenth more warm them up). Default: 10,000.
        public var jobs = 10_000
        /// Jobs per throughput measurement at prefetch 1, where each job waits for the one before. Default: 2,000.
        public var jobsAtPrefetchOne = 2_000
        /// The prefetch (and worker width) settings measured. Default: 1, 10, 100.
        public var prefetches = [1, 10, 100]
        /// Round trips timed one job at a time (a tenth more warm up). Default: 1,000.
        public var latencySamples = 1_000
        /// Cancellations of an executing job timed. Default: 100.
        public var cancellations = 100
        /// Jobs over which worker CPU time and memory growth are measured, after a twentieth as many warm it up.
        /// Default: 100,000.
        public var soakJobs = 100_000
        /// The prefetch and width of the worker measured for CPU time and memory. Default: 10.
        public var soakPrefetch = 10
        /// How many jobs a producer publishes before it waits for their confirms (Warren: one `enqueue` call;
        /// baseline: the most unconfirmed publishes at once). Default: 100.
        public var batch = 100
        /// Warren wire choices the plain raw client copies, to measure what each costs (diagnostics; the published
        /// baseline copies none, and the floor is not changed). Default: none.
        public var baselineVariants: Set<BaselineVariant> = []
        /// Whether the design's floor is measured beside the raw client and Warren (``SideKind/floor``). Without it,
        /// figures held to the floor show no target. Default: `true`.
        public var measuresFloor = true

        /// The sides repetition `number` (from 1) measures, in the order it runs them: the order rotates from one
        /// repetition to the next, so that drift favours none.
        func sides(inRepetition number: Int) -> [SideKind] {
            let sides: [SideKind] = measuresFloor ? [.baseline, .floor, .warren] : [.baseline, .warren]
            let shift = (number - 1) % sides.count
            return Array(sides[shift...] + sides[..<shift])
        }

        /// The full run's options, as ``full``.
        public init() {}

        /// A full run, worth minutes: figures for docs/performance.md.
        public static let full = Options()

        /// A run of well under a minute that exercises every measurement, with too few jobs for figures to mean
        /// much.
        public static var quick: Options {
            var options = Options()
            options.repetitions = 1
            options.jobs = 1_000
            options.jobsAtPrefetchOne = 200
            options.latencySamples = 100
            options.cancellations = 10
            options.soakJobs = 4_000
            return options
        }

        func validate() throws {
            for (name, value) in [
                ("repetitions", repetitions), ("jobs", jobs), ("jobsAtPrefetchOne", jobsAtPrefetchOne),
                ("latencySamples", latencySamples), ("cancellations", cancellations), ("soakJobs", soakJobs),
                ("batch", batch),
            ] where value < 1 {
                throw BenchError("\(name) must be at least 1 (got \(value))")
            }
            for prefetch in prefetches + [soakPrefetch] where !(1...65_535).contains(prefetch) {
                throw BenchError("prefetch \(prefetch) is outside 1...65535")
            }
        }

        /// Jobs per throughput measurement at `prefetch`.
        func jobs(atPrefetch prefetch: Int) -> Int {
            prefetch == 1 ? jobsAtPrefetchOne : jobs
        }
    }
}
