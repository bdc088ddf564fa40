/// One side of the comparison: how it publishes jobs and which worker consumes them.
///
/// Thread safety: confined to the thread that runs the benchmark, like the connections its sides hold.
protocol BenchSide: AnyObject {
    /// Which side this is.
    var kind: SideKind { get }

    /// Declares job queue `queue` as this side's producer would.
    func declare(_ queue: String, admin: BrokerAdmin) throws

    /// The arguments that start this side's worker process on `queue` with `prefetch` (and as many slots).
    func workerArguments(queue: String, prefetch: Int) -> [String]

    /// Where this side's results arrive.
    var resultSource: ResultCollector.Source { get }

    /// Publishes no-op jobs with these ids to `queue`, persistent, and returns once the broker confirmed them all.
    /// Publishes in windows of the benchmark's batch size, never one round trip per job.
    func publish(_ ids: [String], to queue: String) throws

    /// Closes the side's connections and deletes what it declared for itself.
    func close()
}
