/// The results of a producer's watched jobs (`watch: true`): the jobs whose result has not come yet, and the
/// results that came and were not taken yet, at most ``maxKept`` of them (the oldest go first).
///
/// Thread safety: confined to its producer's thread, as the producer is.
struct WatchedResults {
    /// How many results that came and were not taken are kept: a program that never waits for some of its watched
    /// jobs does not hold their results for good.
    static let maxKept = 10_000

    /// Jobs watched whose result has not come.
    private var awaited: Set<String> = []
    /// Results that came and were not taken, with the order they came in.
    private var arrived: [String: (result: JobResult, arrival: UInt64)] = [:]
    private var arrivals: UInt64 = 0

    /// Starts expecting the results of `jobIDs`.
    mutating func watch(_ jobIDs: some Sequence<String>) {
        awaited.formUnion(jobIDs)
    }

    /// Keeps `result` until it is taken; drops the oldest tenth of the kept results when there are too many.
    mutating func keep(_ result: JobResult) {
        awaited.remove(result.jobID)
        arrivals += 1
        arrived[result.jobID] = (result, arrivals)
        guard arrived.count > Self.maxKept else { return }
        let oldest = arrived.sorted { $0.value.arrival < $1.value.arrival }.prefix(Self.maxKept / 10)
        for (jobID, _) in oldest { arrived[jobID] = nil }
    }

    /// The result of `jobID`, if it came; it is then forgotten.
    mutating func take(_ jobID: String) -> JobResult? {
        arrived.removeValue(forKey: jobID)?.result
    }

    func hasArrived(_ jobID: String) -> Bool {
        arrived[jobID] != nil
    }

    /// Whether the result of `jobID` came and waits to be taken, or is expected.
    func isWatching(_ jobID: String) -> Bool {
        awaited.contains(jobID) || arrived[jobID] != nil
    }

    /// The jobs whose results are expected, or came and were not taken.
    var jobIDs: Set<String> { awaited.union(arrived.keys) }
}
