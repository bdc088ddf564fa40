/// A Warren choice the baseline can be made to copy, to measure what that one choice costs.
///
/// The plain raw client uses none of them; the design's floor (``SideKind/floor``) uses ``operationQueue`` and
/// ``resultsStream``. With one more, the raw client's figures answer "how much of the gap is this choice?": for
/// example, with ``resultsExchange`` its results go through Warren's topic exchange to the collector's queue bound
/// to it, as the results of Warren's jobs that name no reply queue do.
public enum BaselineVariant: String, Sendable, Codable, CaseIterable {
    /// Job queues declared as priority queues, as Warren declares them with `--priority-queues` (`x-max-priority`
    /// 5, a dead-letter exchange), and jobs published with a priority.
    case priorityQueue = "priority-queue"
    /// Results published to the `warren.results` topic exchange (routing key: the job id) and received through a
    /// queue bound to it with `#`, instead of through the default exchange to a queue of their own.
    case resultsExchange = "results-exchange"
    /// One `basic.ack` per delivery, instead of one with `multiple` for every confirmed delivery.
    case singleAcks = "single-acks"
    /// Each delivery handed to a Foundation `OperationQueue` (width: the prefetch) as an operation that does
    /// nothing, whose end comes back to the connection's thread through a locked list and a wake-up pipe before the
    /// result is published: the thread hop of Warren's model, and nothing else of Warren.
    case operationQueue = "operation-queue"
    /// Each result also appended to a stream queue of the run's own, as Warren stores results in `warren.results`:
    /// in batches of up to a prefetch window's results, due after 2 ms at most, on a second confirm channel. A
    /// delivery's ack waits for its result's confirm and for its batch's publish, and, while 64 batches await
    /// their confirms, for its batch's confirm too.
    case resultsStream = "results-stream"
}
