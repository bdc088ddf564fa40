import Foundation
import Warren

/// Warren's side: jobs published with ``Producer`` (batched `enqueue`), run by a `warren worker` process, results
/// received through a queue bound to the `warren.results` exchange, as a producer waiting for them receives them
/// (the worker also stores them in the `warren.results` stream, in batches, as in production).
///
/// Thread safety: confined to the thread that runs the benchmark, like its ``Producer``.
final class WarrenSide: BenchSide {
    let kind = SideKind.warren
    private let url: String
    private let batch: Int
    let producer: Producer

    /// Connects a producer whose sequence numbers come from a private file in `stateDirectory`.
    init(url: String, batch: Int, stateDirectory: URL) throws {
        self.url = url
        self.batch = batch
        producer = try Producer(
            url: url, sequences: SequenceStore(path: stateDirectory.appendingPathComponent("sequence").path))
    }

    func declare(_ queue: String, admin: BrokerAdmin) throws {
        try admin.declareWarrenQueue(queue)
    }

    func workerArguments(queue: String, prefetch: Int) -> [String] {
        [
            "worker", "--url", url, "--queue", queue, "--width", "\(prefetch)", "--prefetch", "\(prefetch)",
            "--log-level", "warning", "--worker-id", "bench-\(queue)",
        ]
    }

    var resultSource: ResultCollector.Source { .resultsExchange }

    func publish(_ ids: [String], to queue: String) throws {
        var start = 0
        while start < ids.count {
            let end = min(start + batch, ids.count)
            try producer.enqueue(
                ids[start..<end].map { JobRequest(type: "echo", input: BenchJobs.echoInput, queue: queue, id: $0) })
            start = end
        }
    }

    func close() {
        producer.close()
    }
}
