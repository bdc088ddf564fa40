import Foundation
import Warren

/// Warren's side: jobs published with ``Producer`` (batched `enqueue`), naming a durable result queue as their
/// reply queue, run by a `warren worker` process, which sends each result to that queue, as the baseline's
/// worker does (and also stores them in the `warren.results` stream, in batches, as in production).
///
/// Thread safety: confined to the thread that runs the benchmark, like its ``Producer``.
final class WarrenSide: BenchSide {
    let kind = SideKind.warren
    private let url: String
    private let batch: Int
    /// The queue the jobs name as their reply queue, which the benchmark's collector reads.
    let resultQueue: String
    private let admin: BrokerAdmin
    let producer: Producer

    /// Connects a producer whose sequence numbers come from a private file in `stateDirectory`, and declares the
    /// result queue `resultQueue`.
    init(url: String, batch: Int, stateDirectory: URL, admin: BrokerAdmin, resultQueue: String) throws {
        self.url = url
        self.batch = batch
        self.admin = admin
        self.resultQueue = resultQueue
        producer = try Producer(
            url: url, sequences: SequenceStore(path: stateDirectory.appendingPathComponent("sequence").path))
        try admin.declarePlainQueue(resultQueue)
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

    var resultSource: ResultCollector.Source { .queue(resultQueue) }

    func publish(_ ids: [String], to queue: String) throws {
        var start = 0
        while start < ids.count {
            let end = min(start + batch, ids.count)
            try producer.enqueue(
                ids[start..<end].map {
                    JobRequest(type: "echo", input: BenchJobs.echoInput, queue: queue, replyTo: resultQueue, id: $0)
                })
            start = end
        }
    }

    func close() {
        try? admin.delete(resultQueue)
        producer.close()
    }
}
