import AMQP
import Foundation

/// A producer's results of watched jobs (`watch: true`): its reply queue, and the results and progress reports
/// that come to it.
///
/// The reply queue is server-named and exclusive, declared on first use and consumed on ``replyChannel``. Watched
/// jobs name it in their `reply_to` property, so workers send their results and progress reports straight to it,
/// and nothing needs binding. They arrive through the connection's pump whenever the producer reads its
/// connection, during any call.
///
/// Thread safety: confined to the thread of its ``Producer``.
final class ResultWatcher {
    static let replyChannel: UInt16 = 2

    private let link: ProducerConnection
    private var replyQueue: String?
    private var watched = WatchedResults()
    /// Progress reports that arrived for watched jobs, oldest first.
    private var arrivedProgress: [ProgressMessage] = []
    /// How many progress reports are kept while nobody waits for their jobs.
    private static let maxProgress = 1000

    init(link: ProducerConnection) {
        self.link = link
        link.pump.route(Self.replyChannel) { [unowned self] in received($0) }
    }

    /// The producer's reply queue, declared and consumed on first use.
    func declaredReplyQueue() throws -> String {
        if let replyQueue { return replyQueue }
        let connection = link.connection
        try connection.openChannel(Self.replyChannel)
        let queue = try connection.declareQueue(
            "", durable: false, exclusive: true, autoDelete: true, channel: Self.replyChannel
        ).name
        try connection.consume(queue, noAck: true, channel: Self.replyChannel)
        replyQueue = queue
        return queue
    }

    /// Starts expecting the result of `jobID`.
    func watch(_ jobID: String) {
        watched.watch([jobID])
    }

    /// Keeps a result or a progress report that came to the reply queue.
    private func received(_ delivery: Delivery) {
        if delivery.properties.type == ProgressMessage.messageType {
            guard let report = try? ProgressMessage.decode(delivery.body) else { return }
            // Reports of jobs nobody waits for yet are kept, but only the newest thousand.
            arrivedProgress.append(report)
            if arrivedProgress.count > Self.maxProgress {
                arrivedProgress.removeFirst(arrivedProgress.count - Self.maxProgress)
            }
        } else if let result = try? JobResult.decode(delivery.body) {
            watched.keep(result)
        }
    }

    /// Waits for the first result to arrive of `jobIDs`, whichever it is (``Producer/waitForFirstResult(of:timeout:progress:)``).
    func waitForFirstResult(
        of jobIDs: Set<String>, timeout: Duration, progress: (ProgressMessage) -> Void
    ) throws -> JobResult {
        guard jobIDs.contains(where: watched.isWatching) else { throw Self.notWatched(jobIDs) }
        let deadline = ContinuousClock.now + timeout
        return try link.brokerCall {
            while true {
                for report in arrivedProgress where jobIDs.contains(report.jobID) { progress(report) }
                arrivedProgress.removeAll { jobIDs.contains($0.jobID) }
                if let jobID = jobIDs.first(where: watched.hasArrived), let result = watched.take(jobID) {
                    return result
                }
                guard deadline > .now else {
                    let seconds = (timeout / .milliseconds(1)).rounded() / 1000
                    let ids = jobIDs.sorted()
                    throw WarrenError(
                        .timeout,
                        "no result for job\(ids.count == 1 ? "" : "s") \(ids.prefix(3).joined(separator: ", "))"
                            + "\(ids.count > 3 ? " and \(ids.count - 3) more" : "") "
                            + "within \(String(format: "%g", seconds)) s")
                }
                try link.pump.dispatch(until: deadline) {
                    jobIDs.contains(where: watched.hasArrived) || arrivedProgress.contains { jobIDs.contains($0.jobID) }
                }
            }
        }
    }

    /// Keeps the results and progress reports that the broker sent, for ``takeResult(of:)``: waits first, up to
    /// `timeout` or until `wakeUp` is signalled, if nothing came yet. For a thread that must also wake for calls.
    func readReplies(waitingUpTo timeout: Duration, wakeUp: WakeUpSignal) throws {
        try link.brokerCall {
            _ = link.connection.waitForActivity(wakeUp: wakeUp, timeout: timeout)
            try link.pump.dispatch()
        }
    }

    /// The result of watched job `jobID`, if it arrived; it is then forgotten.
    func takeResult(of jobID: String) -> JobResult? {
        watched.take(jobID)
    }

    /// Whether the result of `jobID` is expected or held: its job was enqueued with `watch: true`, and nobody took
    /// the result yet.
    func isWatching(_ jobID: String) -> Bool {
        watched.isWatching(jobID)
    }

    /// The watched jobs whose results were not handed out.
    var watchedJobIDs: Set<String> { watched.jobIDs }

    /// The error of a wait for the results of `jobIDs`, none of which the producer watches.
    static func notWatched(_ jobIDs: Set<String>) -> WarrenError {
        let ids = jobIDs.sorted()
        guard !ids.isEmpty else { return WarrenError(.invalidConfiguration, "no jobs to wait for") }
        return WarrenError(
            .invalidConfiguration,
            "job\(ids.count == 1 ? " \(ids[0]) is" : "s \(ids.prefix(3).joined(separator: ", ")) are") not watched by "
                + "this producer: results come to a producer only for the jobs it enqueued with watch: true, each "
                + "once, and it keeps the latest \(WatchedResults.maxKept) that nobody took; read others from the "
                + "warren.results stream (ResultReader, warren results --job)")
    }
}
