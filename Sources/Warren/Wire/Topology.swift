import AMQP

/// The exchanges and queues of the v1 wire format, and the one place that declares them.
///
/// Every party declares what it uses with exactly these arguments, so declarations never conflict
/// (a mismatch would close the channel with 406 PRECONDITION_FAILED).
// Usable from inline code: public initialisers take ``defaultQueue`` as a default argument.
@usableFromInline package enum Topology {
    /// The job queue used when none is named.
    @usableFromInline package static let defaultQueue = "warren.default"
    /// Topic exchange for results; the routing key is the job id.
    package static let resultsExchange = "warren.results"
    /// Stream queue that keeps every result, for ``resultsRetention`` or up to ``resultsMaxBytes``: workers append
    /// their results to it in batches (``ResultBatch``), through the default exchange. `warren results` reads it,
    /// and so do workers holding jobs with dependencies, to learn which jobs have ended wherever they ran. Reading
    /// it removes nothing.
    package static let resultsStream = "warren.results"
    /// How long ``resultsStream`` keeps results.
    package static let resultsRetention = "7D"
    /// How many bytes of results ``resultsStream`` keeps at most; the oldest segments go first.
    package static let resultsMaxBytes: Int64 = 2_000_000_000
    /// Topic exchange for progress reports; the routing key is the job id. Messages are transient.
    package static let progressExchange = "warren.progress"
    /// Fanout exchange for control messages (cancellations).
    package static let controlExchange = "warren.control"
    /// Stream queue that keeps control messages for a day, so workers that start later still see them.
    package static let controlStream = "warren.control"
    /// How long ``controlStream`` keeps control messages.
    package static let controlRetention = "1D"
    /// Fanout exchange where rejected messages go, with the reason in the `x-warren-dead-reason` header.
    package static let deadExchange = "warren.dead"
    /// Durable queue that keeps dead-lettered messages.
    package static let deadQueue = "warren.dead"
    /// Durable queue bound to ``deadExchange`` beside ``deadQueue``, which workers consume: a copy of each dead
    /// letter, so that a job the broker dead-lettered itself (its reason in `x-death`) gets a `failed` result.
    package static let deadWatchQueue = "warren.dead.watch"
    /// The queue that holds the state of the schedules, consumed by every ``Scheduler`` (single active consumer).
    package static let scheduleQueue = "warren.schedules"
    /// The maximum AMQP priority of priority job queues: the five ``JobPriority`` levels.
    package static let maxPriority: Int64 = 5

    /// Header: why a message was dead-lettered (a ``JobError`` code).
    package static let deadReasonHeader = "x-warren-dead-reason"
    /// Header: the human-readable explanation of ``deadReasonHeader``.
    package static let deadMessageHeader = "x-warren-dead-message"
    /// Header: the queue a dead-lettered message came from.
    package static let deadQueueHeader = "x-warren-original-queue"
    /// Header: which attempt a job delivery is (1 when absent).
    package static let attemptHeader = "x-warren-attempt"
    /// A job message's earliest start, in milliseconds since 1970, as a later one of its `notBefore`: a retry
    /// whose handler chose its wait (``JobError/retryAfter``) carries it through the delay queues' hops.
    package static let notBeforeHeader = "x-warren-not-before"
    /// Set by `warren dead requeue` (milliseconds since 1970): the worker deaths a job was reported at before it
    /// count no more.
    package static let requeuedAtHeader = "x-warren-requeued-at"

    /// The delays, in seconds, of the delay queues workers use (``delayQueue(for:seconds:)``), 1 s to 2^15 s (9.1
    /// hours): a retry's backoff, at most 375 s, or a parked job's 5 s wait goes to the shortest one at least as
    /// long; a scheduled job's hop to the longest one no longer than its wait. The longest is well within the
    /// control stream's day, so that each hop of a scheduled job still finds a cancellation sent before it.
    package static let delayQueueSeconds = (0...15).map { 1 << $0 }

    /// The delay queue that holds jobs of `queue` for `seconds` (before a retry, or while their dependencies run
    /// elsewhere): its messages expire back into `queue` through the default exchange. One per power-of-two delay,
    /// so a long wait never holds up a short one.
    package static func delayQueue(for queue: String, seconds: Int) -> String {
        "warren.delay.\(queue).\(seconds)s"
    }

    /// The longest job queue name, in bytes: its delay queues' names (``delayQueue(for:seconds:)``) must fit in
    /// AMQP's 255.
    package static let maxJobQueueNameLength = 255 - delayQueue(for: "", seconds: delayQueueSeconds.last!).utf8.count

    /// Why `name` cannot be a job queue, or `nil` when it can: it must be 1 to ``maxJobQueueNameLength`` bytes,
    /// not start with `amq.` (the broker's) and not be one of Warren's own queues. An empty name would be the most
    /// dangerous: AMQP takes it for the last queue declared on the channel, which for a worker is `warren.dead`.
    package static func problem(withJobQueue name: String) -> String? {
        if name.isEmpty {
            return "a job queue name cannot be empty (the broker would take it for the last queue declared)"
        }
        if name.utf8.count > maxJobQueueNameLength {
            return "job queue name '\(name.prefix(40))…' is \(name.utf8.count) bytes; at most \(maxJobQueueNameLength)"
        }
        // The broker drops CR and LF from a queue's name, but not from a routing key: no job would reach it.
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "a job queue name cannot hold control characters (line breaks, tabs, …)"
        }
        if name.hasPrefix("amq.") { return "job queue name '\(name)' starts with amq., which the broker reserves" }
        if isOwnQueue(name) { return "'\(name)' is one of Warren's own queues, not a job queue" }
        return nil
    }

    /// Whether `name` is one of Warren's own queues: the dead letters and their copies, the streams, the schedule
    /// state, delay queues, unique jobs' locks and fleet-wide rate limits' windows.
    package static func isOwnQueue(_ name: String) -> Bool {
        [deadQueue, deadWatchQueue, resultsStream, controlStream, scheduleQueue].contains(name)
            || ["warren.delay.", UniqueLock.prefix, FleetRateLimit.prefix].contains(where: { name.hasPrefix($0) })
    }

    /// Why job queues cannot be created both as priority queues and as quorum queues, or `nil`: RabbitMQ 3's quorum
    /// queues have no priorities.
    package static func problem(creatingPriorityQueues priorities: Bool, quorumQueues quorum: Bool) -> String? {
        priorities && quorum ? "quorum queues have no priorities: ask for priority queues or quorum queues" : nil
    }

    /// Declares the delay queue ``delayQueue(for:seconds:)``, which deletes itself once unused for a while
    /// (`delayQueueLease`): each use declares it again, which renews that lease, so that it never goes while it
    /// holds a job (a publish to a queue that is gone would be confirmed and lost). Warren creates delay queues as
    /// quorum queues, which dead-letter their expired jobs back into `queue` at least once (RabbitMQ's
    /// `at-least-once` strategy, which needs `x-overflow` `reject-publish`): into a job queue whose cluster node is
    /// down, a classic queue would drop them; a quorum one keeps them, for as long as its lease, a week, since
    /// nothing renews it while no worker takes jobs from `queue`. One that exists as a classic queue (made by an
    /// earlier build, with a lease of an hour) is used as it is.
    /// - Parameter queue: The job queue the delay queue sends its jobs back to.
    /// - Parameter seconds: The delay queue's delay.
    /// - Parameter quorum: The kind to try first: the one the queue had at its last use, if known.
    /// - Parameter connection: The connection to declare on.
    /// - Returns: Whether the queue is a quorum queue, or `nil` when it lives on a cluster node that is down
    ///   (`AMQPError.isQueueNodeDown`).
    /// - Throws: `AMQPError` when the broker refuses otherwise, or the connection fails.
    package static func declareDelayQueue(
        for queue: String, seconds: Int, quorum: Bool = true, on connection: AMQPConnection
    ) throws -> Bool? {
        let name = delayQueue(for: queue, seconds: seconds)
        do {
            for asQuorum in [quorum, !quorum] {
                if try declare(
                    name, arguments: delayQueueArguments(for: queue, seconds: seconds, quorum: asQuorum), on: connection
                ) {
                    return asQuorum
                }
            }
        } catch let error as AMQPError where error.isQueueNodeDown {
            return nil
        }
        throw AMQPError(
            .channelClosed, "delay queue '\(name)' exists with arguments Warren does not give it", replyCode: 406,
            channel: declarationChannel)
    }

    /// How long a delay queue lives unused beyond its delay, in milliseconds: a week for a quorum one, an hour for
    /// a classic one.
    static func delayQueueLease(quorum: Bool) -> Int64 {
        quorum ? 604_800_000 : 3_600_000
    }

    /// The arguments of delay queue ``delayQueue(for:seconds:)``.
    static func delayQueueArguments(for queue: String, seconds: Int, quorum: Bool) -> AMQPTable {
        var arguments: AMQPTable = [
            "x-message-ttl": .int(Int64(seconds) * 1000), "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": .string(queue),
            "x-expires": .int(Int64(seconds) * 1000 + delayQueueLease(quorum: quorum)),
        ]
        if quorum {
            arguments["x-queue-type"] = "quorum"
            arguments["x-dead-letter-strategy"] = "at-least-once"
            arguments["x-overflow"] = "reject-publish"
        }
        return arguments
    }

    /// The channel opened and closed for declarations the broker may refuse by closing it: a job queue
    /// (``declareJobQueue(_:priorities:quorum:on:channel:)``), the control stream while it starts. A connection that
    /// declares so uses it for nothing else.
    package static let declarationChannel: UInt16 = 100

    /// Declares job queue `name`, with its dead-letter exchange, unless it exists: an existing queue is used as it
    /// was declared (as a priority queue, a quorum queue or neither, by whichever client came first), so workers and
    /// producers that disagree on `priorities` or `quorum` never fail on a queue the other made.
    /// - Parameter name: The job queue.
    /// - Parameter priorities: Whether a queue this declares is a priority queue (`x-max-priority` ``maxPriority``),
    ///   whose broker delivers waiting jobs highest priority first, for about a third more broker work per job.
    /// - Parameter quorum: Whether a queue this declares is a quorum queue (`x-queue-type: quorum`): replicated
    ///   on the nodes of a cluster, first in, first out. Not with `priorities`: RabbitMQ 3's quorum queues have no
    ///   priorities.
    /// - Parameter connection: The connection to declare on.
    /// - Parameter channel: The channel for the dead-letter exchange and queue.
    /// - Returns: Whether this call created the queue, with exactly the arguments asked for; `false` when it existed.
    /// - Throws: `AMQPError` when the broker refuses a declaration otherwise, or the connection fails.
    @discardableResult
    package static func declareJobQueue(
        _ name: String, priorities: Bool, quorum: Bool = false, on connection: AMQPConnection, channel: UInt16
    ) throws -> Bool {
        if let problem = problem(creatingPriorityQueues: priorities, quorumQueues: quorum) {
            preconditionFailure(problem)
        }
        // Look for the queue (a client that finds it needs no permission to configure anything), declare it and its
        // dead letters if it is missing, and look again if another client declared it otherwise meanwhile.
        guard try lookUp(name, on: connection) == nil else { return false }
        try declareDeadLetters(quorum: quorum, on: connection, channel: channel)
        let arguments = jobQueueArguments(priorities: priorities, quorum: quorum)
        if try declare(name, arguments: arguments, on: connection) { return true }
        guard try lookUp(name, on: connection) == nil else { return false }
        // As the broker's own refusal would be: a worker reconnects and declares it again.
        throw AMQPError(
            .channelClosed, "job queue '\(name)' was deleted while it was being declared", replyCode: 404,
            channel: declarationChannel)
    }

    /// The arguments of a job queue Warren creates: its dead-letter exchange; with `priorities`, its
    /// `x-max-priority`; with `quorum`, its `x-queue-type`.
    static func jobQueueArguments(priorities: Bool, quorum: Bool = false) -> AMQPTable {
        var arguments: AMQPTable = ["x-dead-letter-exchange": .string(deadExchange)]
        if priorities { arguments["x-max-priority"] = .int(maxPriority) }
        if quorum { arguments["x-queue-type"] = "quorum" }
        return arguments
    }

    /// Whether job queue `name` is a priority queue as Warren creates one (``declareJobQueue(_:priorities:quorum:on:channel:)``
    /// with `priorities`), so that the broker delivers its jobs highest priority first; `false` also when there is
    /// no such queue. The broker accepts a declaration that repeats a queue's arguments and refuses one that differs
    /// (406, which closes ``declarationChannel``), so a queue declared otherwise is left as it is.
    /// - Throws: `AMQPError` when the broker refuses otherwise, or the connection fails.
    package static func isPriorityQueue(_ name: String, on connection: AMQPConnection) throws -> Bool {
        // Looked for first: the declaration would create a missing queue.
        guard try lookUp(name, on: connection) != nil else { return false }
        return try declare(name, arguments: jobQueueArguments(priorities: true), on: connection)
    }

    /// The header a stream adds to each message it delivers: the message's offset in the stream.
    package static let streamOffsetHeader = "x-stream-offset"

    /// Whether queue `name` is a stream declared with no other argument (a declaration as one is accepted); `false`
    /// also when there is no such queue, or it was declared otherwise: a stream with arguments of its own
    /// (`x-max-age`, say) cannot be told from another queue so, nor can any queue by a user who may not configure it.
    /// - Throws: `AMQPError` when the broker refuses otherwise, or the connection fails.
    package static func isStream(_ name: String, on connection: AMQPConnection) throws -> Bool {
        guard try lookUp(name, on: connection) != nil else { return false }
        do {
            return try declare(name, arguments: ["x-queue-type": "stream"], on: connection)
        } catch let error as AMQPError where error.channel == declarationChannel && error.replyCode == 403 {
            return false  // a user who may not configure the queue cannot ask so: taken for a queue
        }
    }

    /// Whether job queue `name`, which exists, is known to take a channel-wide prefetch limit (`basic.qos` with
    /// global=true): whether it is a classic queue as Warren creates them, first in, first out or with priorities
    /// (found as ``isPriorityQueue(_:on:)`` finds them). A quorum queue refuses a consumer on a channel with such a
    /// limit (540 NOT_IMPLEMENTED, which closes the connection); a queue declared with other arguments may be one.
    /// - Throws: `AMQPError` when the broker refuses otherwise, or the connection fails.
    package static func takesChannelWidePrefetch(_ name: String, on connection: AMQPConnection) throws -> Bool {
        try declare(name, arguments: jobQueueArguments(priorities: false), on: connection)
            || declare(name, arguments: jobQueueArguments(priorities: true), on: connection)
    }

    /// Whether job queue `name`, which exists, is known to be a classic queue: declared as Warren declares classic
    /// ones (``takesChannelWidePrefetch(_:on:)``), or with no arguments at all, which the broker takes again only
    /// for a classic queue. One declared with arguments of its own is not known: AMQP does not tell a queue's type.
    /// - Throws: `AMQPError` when the broker refuses otherwise, or the connection fails.
    package static func isKnownClassicQueue(_ name: String, on connection: AMQPConnection) throws -> Bool {
        try takesChannelWidePrefetch(name, on: connection) || declare(name, arguments: [:], on: connection)
    }

    /// What the broker holds in queue `name` (messages ready for a consumer, consumers), or `nil` if there is no
    /// such queue: a passive declaration, which the broker refuses with 404 when it finds none.
    /// - Throws: `AMQPError` when the broker refuses otherwise (`AMQPError.isQueueNodeDown` for a queue on a
    ///   cluster node that is down), or the connection fails.
    package static func lookUp(_ name: String, on connection: AMQPConnection) throws -> AMQPConnection.QueueInfo? {
        try onDeclarationChannel(connection, refusedWith: 404) {
            try connection.declareQueue(name, passive: true, channel: declarationChannel)
        }
    }

    /// Whether exchange `name` exists: a passive declaration, which needs no permission.
    /// - Throws: `AMQPError` when the connection fails.
    package static func exchangeExists(_ name: String, on connection: AMQPConnection) throws -> Bool {
        try onDeclarationChannel(connection, refusedWith: 404) {
            try connection.declareExchange(name, type: "", passive: true, channel: declarationChannel)
        } != nil
    }

    /// Whether queue `name` exists, also when it is exclusive to another connection (which the broker does not
    /// show, 405).
    /// - Throws: `AMQPError` when the connection fails or the queue's node is down.
    package static func queueExists(_ name: String, on connection: AMQPConnection) throws -> Bool {
        do {
            return try lookUp(name, on: connection) != nil
        } catch let error as AMQPError where error.channel == declarationChannel && error.replyCode == 405 {
            return true
        }
    }

    /// Declares queue `name` with `arguments`; returns `false` if the broker refuses because the queue exists with
    /// other arguments (406 `inequivalent arg`). Its other refusals with 406, such as a virtual host's queue limit
    /// (`vhost queue limit (N) is reached`), throw with the broker's words.
    private static func declare(_ name: String, arguments: AMQPTable, on connection: AMQPConnection) throws -> Bool {
        try onDeclarationChannel(connection, refusedWith: 406, when: isInequivalentArguments) {
            _ = try connection.declareQueue(name, arguments: arguments, channel: declarationChannel)
        } != nil
    }

    /// Whether the broker refused a declaration because the queue exists with other arguments: RabbitMQ's
    /// `PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue …` (and a refusal without words).
    static func isInequivalentArguments(_ error: AMQPError) -> Bool {
        error.replyText.map { $0.contains("inequivalent arg") } ?? true
    }

    /// Runs `declaration` on ``declarationChannel``, which the broker closes when it refuses one: `nil` when it
    /// refuses with reply code `refusal` (and the refusal is one `when` accepts); any other failure throws.
    private static func onDeclarationChannel<T>(
        _ connection: AMQPConnection, refusedWith refusal: UInt16, when accepted: (AMQPError) -> Bool = { _ in true },
        _ declaration: () throws -> T
    ) throws -> T? {
        try connection.openChannel(declarationChannel)
        let result: T
        do {
            result = try declaration()
        } catch let error as AMQPError
            where error.channel == declarationChannel && error.replyCode == refusal && !error.isQueueNodeDown
            && accepted(error)
        {
            return nil
        }
        try connection.closeChannel(declarationChannel)
        return result
    }

    /// The properties of the dead letter of a message that had `properties`: the same, persistent, with the reason,
    /// its explanation and the queue the message came from in the headers, and without an `expiration`, which
    /// would make the broker drop the letter from ``deadQueue`` when it passes.
    static func deadLetterProperties(
        of properties: MessageProperties, reason: String, message: String, queue: String
    ) -> MessageProperties {
        var letter = properties
        var headers = letter.headers ?? [:]
        headers[deadReasonHeader] = .string(reason)
        headers[deadMessageHeader] = .string(message)
        headers[deadQueueHeader] = .string(queue)
        letter.headers = headers
        letter.persistent = true
        letter.expiration = nil
        return letter
    }

    /// Declares the dead-letter exchange and, unless it exists, the dead-letter queue bound to it: an existing
    /// queue is used as it was declared, as with job queues.
    /// - Parameter quorum: Whether a queue this declares is a quorum queue, which outlives the loss of a cluster
    ///   node.
    /// - Parameter connection: The connection to declare on.
    /// - Parameter channel: The channel to declare on.
    /// - Returns: `false` when the queue lives on a cluster node that is down (`AMQPError.isQueueNodeDown`):
    ///   dead letters cannot reach it until that node returns.
    /// - Throws: `AMQPError` when the broker refuses otherwise, or the connection fails.
    @discardableResult
    package static func declareDeadLetters(quorum: Bool = false, on connection: AMQPConnection, channel: UInt16) throws
        -> Bool
    {
        try connection.declareExchange(deadExchange, type: "fanout", channel: channel)
        do {
            if try lookUp(deadQueue, on: connection) == nil {
                // Refused (406) only if another client declared it otherwise meanwhile.
                _ = try declare(deadQueue, arguments: quorum ? ["x-queue-type": "quorum"] : [:], on: connection)
            }
        } catch let error as AMQPError where error.isQueueNodeDown {
            return false
        }
        try connection.bindQueue(deadQueue, to: deadExchange, channel: channel)
        return true
    }

    /// Declares ``deadWatchQueue`` unless it exists, and binds it to the dead-letter exchange, which
    /// ``declareDeadLetters(quorum:on:channel:)`` declared.
    /// - Returns: `false` when the queue lives on a cluster node that is down (`AMQPError.isQueueNodeDown`).
    /// - Throws: `AMQPError` when the broker refuses otherwise, or the connection fails.
    static func declareDeadLetterWatch(quorum: Bool, on connection: AMQPConnection, channel: UInt16) throws -> Bool {
        do {
            if try lookUp(deadWatchQueue, on: connection) == nil {
                _ = try declare(deadWatchQueue, arguments: quorum ? ["x-queue-type": "quorum"] : [:], on: connection)
            }
        } catch let error as AMQPError where error.isQueueNodeDown {
            return false
        }
        try connection.bindQueue(deadWatchQueue, to: deadExchange, channel: channel)
        return true
    }

    /// Declares the results exchange and the stream that keeps results, so that no result is ever published
    /// before they exist. The stream is not bound to the exchange: workers append results to it in batches. A
    /// binding left by a pre-release build, which stored each result on its own, is removed.
    package static func declareResults(on connection: AMQPConnection, channel: UInt16) throws {
        try connection.declareExchange(resultsExchange, type: "topic", channel: channel)
        try connection.declareQueue(
            resultsStream,
            arguments: [
                "x-queue-type": "stream", "x-max-age": .string(resultsRetention),
                "x-max-length-bytes": .int(resultsMaxBytes),
            ],
            channel: channel)
        try connection.unbindQueue(resultsStream, from: resultsExchange, routingKey: "#", channel: channel)
    }

    /// Declares the progress exchange.
    package static func declareProgress(on connection: AMQPConnection, channel: UInt16) throws {
        try connection.declareExchange(progressExchange, type: "topic", channel: channel)
    }

    /// Declares the control exchange and the stream that keeps control messages.
    package static func declareControl(on connection: AMQPConnection, channel: UInt16) throws {
        try connection.declareExchange(controlExchange, type: "fanout", channel: channel)
        try connection.declareQueue(
            controlStream,
            arguments: ["x-queue-type": "stream", "x-max-age": .string(controlRetention)],
            channel: channel)
        try connection.bindQueue(controlStream, to: controlExchange, channel: channel)
    }

    /// Declares ``scheduleQueue``: durable, with one active consumer at a time (the leading scheduler), as a
    /// quorum queue with `quorum`. One that exists is used as it is.
    package static func declareScheduleQueue(quorum: Bool, on connection: AMQPConnection, channel: UInt16) throws {
        guard try lookUp(scheduleQueue, on: connection) == nil else { return }
        var arguments: AMQPTable = ["x-single-active-consumer": .bool(true)]
        if quorum { arguments["x-queue-type"] = "quorum" }
        // Refused (406) only if another scheduler declared it otherwise meanwhile.
        _ = try declare(scheduleQueue, arguments: arguments, on: connection)
    }
}
