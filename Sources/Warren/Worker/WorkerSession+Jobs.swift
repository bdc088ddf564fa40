import AMQP
import Foundation

/// Job deliveries: from arrival to the result and the ack.
extension WorkerSession {
    func handleJob(_ delivery: Delivery) throws {
        let receivedAt = Date()
        // A stopping worker takes back only the redeliveries of its own jobs, after a reconnect.
        if stopDeadline != nil, redeliveriesAwaitedUntil == nil {
            return try nackJob(delivery.deliveryTag, requeue: true)
        }
        if delivery.properties.headers?[Topology.streamOffsetHeader] != nil, try refusesStream(delivery) { return }
        let descriptor: OperationDescriptor
        do {
            descriptor = try jobDecoder.decode(
                delivery.body, contentType: delivery.properties.contentType,
                contentEncoding: delivery.properties.contentEncoding)
        } catch let error as JobError {
            return try reject(delivery, error: error, receivedAt: receivedAt)
        }
        if descriptor.deadline != nil { mayHoldDeadlines = true }
        let running = inFlight[descriptor.id]
        if let running, running.generation != generation {
            // Redelivered after a reconnect while the job still runs here: it ends once, on this delivery.
            running.delivery = delivery
            running.generation = generation
            return consumerLimitsMayFallShort()
        }
        if let result = orphanResults.take(descriptor.id) {
            return try end(delivery, with: result, lock: HeldLock(descriptor))
        }
        if recycling != nil || stopDeadline != nil { return try sendBackWhileRetiring(delivery) }
        let attempt = Self.attempt(of: delivery)
        let queue = queue(of: delivery)
        delivered(from: queue)
        if let cancellation = cancellations.cancellation(of: descriptor, queue: queue) {
            let result = makeResult(
                descriptor, delivery: delivery, status: .cancelled, cancellation: cancellation,
                timings: JobTimings(enqueuedAt: descriptor.createdAt, receivedAt: receivedAt, finishedAt: Date()))
            return try end(delivery, with: result, lock: HeldLock(descriptor))
        }
        if delivery.redelivered { try findDeadWorkers(afterRedelivery: true) }
        let deaths = deaths(of: descriptor, delivery)
        if let error = crashedWorkerError(deaths) {
            return try reject(delivery, error: error, receivedAt: receivedAt, descriptor: descriptor)
        }
        if let notBefore = Self.notBefore(of: descriptor, delivery), notBefore > receivedAt {
            return try postpone(delivery, descriptor, until: notBefore, from: queue, receivedAt: receivedAt)
        }
        guard let registered = worker.registry[descriptor.type] else {
            let known = worker.registry.types.joined(separator: ", ")
            let error = JobError(
                code: "unknownType",
                message: "unknown operation type '\(descriptor.type)'; this worker runs: \(known)")
            return try reject(delivery, error: error, receivedAt: receivedAt, descriptor: descriptor)
        }
        guard running == nil else {
            let error = JobError(
                code: "duplicateID",
                message: "job id '\(descriptor.id)' is already held by this worker (waiting, parked or running)")
            // Another delivery of the job runs here, and holds its lock.
            return try reject(
                delivery, error: error, receivedAt: receivedAt, descriptor: descriptor, reply: false,
                releasesLock: false)
        }
        let mailbox = worker.mailbox
        let jobID = descriptor.id
        let context = JobContext(descriptor: descriptor, attempt: attempt, logger: logger) { fraction, message in
            mailbox.post(.progress(jobID: jobID, fraction: fraction, message: message))
        }
        let timeLimit = timeLimit(of: descriptor)
        var started: (@Sendable () -> Void)?
        if timeLimit != nil { started = { mailbox.post(.started(jobID: jobID)) } }
        started = metrics.recordingQueueLatency(of: descriptor, delivery, from: queue, then: started)
        let operation = JobOperation(
            job: context, input: descriptor.input, body: registered.body, journal: journal,
            startGate: startGates.isEmpty ? nil : startGates[descriptor.type], started: started
        ) { finished in
            mailbox.post(.finished(finished))
        }
        let job = InFlightJob(
            descriptor: descriptor, delivery: delivery, generation: generation, queue: queue,
            localQueue: registered.localQueue, attempt: attempt, receivedAt: receivedAt, operation: operation,
            timeLimit: timeLimit)
        job.runsAlone = !deaths.isEmpty || (delivery.redelivered && jobsInOtherJournals.contains(descriptor.id))
        if try holdForDependencies(job) { return }
        inFlight[descriptor.id] = job
        try take(job)
    }

    /// Ends `job`, which the worker holds, as its operation reported.
    func finish(_ job: InFlightJob, _ finished: FinishedJob) throws {
        inFlight[finished.jobID] = nil
        aloneJobEnded(job)
        let wasParked = !parked.isEmpty && parked.removeValue(forKey: finished.jobID) != nil
        if job.generation != generation {
            if wasParked { try updatePrefetch() }
            return finishOrphan(job, finished)
        }
        left(job)
        if wasParked { try updatePrefetch() }
        let timings = JobTimings(
            enqueuedAt: job.descriptor.createdAt, receivedAt: job.receivedAt, startedAt: finished.startedAt,
            finishedAt: finished.finishedAt)
        let result: JobResult
        switch finished.outcome {
        case .cancelled(let cancellation) where Cancellation.requeueReasons.contains(cancellation.reason):
            return try nackJob(job.delivery.deliveryTag, requeue: true)
        case .cancelled(let cancellation):
            result = makeResult(
                job.descriptor, delivery: job.delivery, status: .cancelled, cancellation: cancellation,
                timings: timings)
        case .succeeded(let output):
            result = makeResult(job.descriptor, delivery: job.delivery, status: .succeeded, timings: timings, output: output)
        case .failed(let error):
            if let wait = retryWait(job, after: error) {
                return try retry(job, after: error, waiting: wait, timings: timings)
            }
            job.operation.job.logger.warning("job failed", metadata: ["error": "\(error)"])
            let failed = makeResult(job.descriptor, delivery: job.delivery, status: .failed, timings: timings, error: error)
            return try deadLetterJob(job.delivery, error: error, result: failed, lock: HeldLock(job.descriptor))
        }
        try end(job.delivery, with: result, lock: HeldLock(job.descriptor))
    }

    /// Releases `lock`, the job's unique lock if it holds one, then publishes a succeeded or cancelled `result` and
    /// acks `delivery` once the broker confirmed it. When the connection fails first, the result is kept for the
    /// redelivery (``OrphanResults``), as are results whose confirm is lost with the connection.
    /// A result larger than the broker takes (``maxResultBytes``) fails the job instead
    /// (``endTooLarge(_:_:size:lock:)``).
    func end(_ delivery: Delivery, with result: JobResult, lock: HeldLock?) throws {
        let body = try result.encoded()
        guard body.count <= maxResultBytes else {
            return try endTooLarge(delivery, result, size: body.count, lock: lock)
        }
        let confirms: [Settlement.Confirm]
        do {
            try release(lock)
            confirms = try publishResult(result, body: body, replyTo: delivery.replyQueue)
        } catch {
            orphanResults.keep(result)
            throw error
        }
        try settle(delivery.deliveryTag, action: .ack, after: confirms, result: result, delivery: delivery)
    }

    /// Fails a job whose `result` (`size` bytes encoded) is larger than the broker takes: it is dead-lettered with
    /// reason `resultTooLarge`, and a failed result goes out in its place. Running it again would make the same
    /// result.
    func endTooLarge(_ delivery: Delivery, _ result: JobResult, size: Int, lock: HeldLock?) throws {
        let error = JobError(
            code: "resultTooLarge",
            message: "the job's result is \(size) bytes; the broker takes messages of at most "
                + "\(brokerMaxMessageBytes) bytes (its max_message_size)")
        logger.error(
            "dead-lettering a job whose result is larger than the broker takes",
            metadata: ["job": "\(result.jobID)", "error": "\(error)"])
        var failed = result
        (failed.status, failed.output, failed.cancellation, failed.error) = (.failed, nil, nil, error)
        try deadLetterJob(delivery, error: error, result: failed, lock: lock)
    }

    /// The largest result a job may have: one the broker takes (the results stream stores it alone, not in a batch,
    /// when a batch of it would be larger).
    var maxResultBytes: Int { brokerMaxMessageBytes }

    /// Takes in the broker's largest message, when `error` is its refusal of a larger one: results, result batches
    /// and status replies are kept under it from then on.
    func learnBrokerMaxMessageSize(from error: AMQPError) {
        guard let limit = error.brokerMaxMessageSize, limit < brokerMaxMessageBytes, limit > 0 else { return }
        brokerMaxMessageBytes = limit
        storedResults.maxBytes = min(storedResults.maxBytes, limit)
        logger.warning(
            """
            the broker takes messages of at most \(limit) bytes (max_message_size): results, result batches and \
            status replies are kept under it; a job whose result is larger fails (resultTooLarge)
            """)
    }

    // MARK: - Bad input

    /// Dead-letters a job that can never run, and replies with a `failed` result when its id is known; first
    /// releases its unique lock, if it holds one, unless `releasesLock` is `false`.
    func reject(
        _ delivery: Delivery, error: JobError, receivedAt: Date, descriptor: OperationDescriptor? = nil,
        reply: Bool = true, releasesLock: Bool = true
    ) throws {
        // An oversized body is not read.
        let salvaged =
            descriptor == nil && delivery.body.count <= configuration.maxMessageBytes
            ? JobDecoder.salvage(from: delivery.body) : SalvagedDescriptor()
        let candidates = [descriptor?.id, salvaged.id, delivery.properties.messageID]
        let id = candidates.compactMap { $0 }.first { OperationDescriptor.problem(withID: $0) == nil }
        logger.warning(
            "dead-lettering a job message",
            metadata: [
                "reason": "\(error.code)", "detail": "\(error.message)", "job": "\(id ?? "-")",
                "messageId": "\(delivery.properties.messageID ?? "-")",
                "type": "\(descriptor?.type ?? salvaged.type ?? delivery.properties.type ?? "-")",
                "attempt": "\(Self.attempt(of: delivery))",
            ])
        let result = reply ? id.map { id in
            JobResult(
                jobID: id, type: descriptor?.type ?? salvaged.type ?? delivery.properties.type,
                sequence: descriptor?.sequence ?? salvaged.sequence ?? 0, key: descriptor?.key ?? salvaged.key,
                status: .failed, error: error, attempt: Self.attempt(of: delivery),
                redelivered: delivery.redelivered, requeuedAt: Self.requeuedAt(of: delivery),
                workerID: configuration.workerID,
                timings: JobTimings(enqueuedAt: descriptor?.createdAt, receivedAt: receivedAt, finishedAt: Date()))
        } : nil
        let lock = releasesLock ? descriptor.flatMap(HeldLock.init) ?? HeldLock(salvaged) : nil
        try deadLetterJob(delivery, error: error, result: result, lock: lock)
    }

    /// Once the dead-letter queue is reachable, releases `lock`, dead-letters the job of `delivery` with `error`,
    /// publishes its failed `result` if it has one, and acks it once the broker confirmed them. A dead letter the
    /// broker refuses (a full `warren.dead`) goes out again every few seconds while the job is held
    /// (``hold(_:_:_:_:)``, listed in `status`): the job does not run again.
    func deadLetterJob(_ delivery: Delivery, error: JobError, result: JobResult?, lock: HeldLock?) throws {
        try whenDeadLettersReachable(of: delivery) { [unowned self] in
            try release(lock)
            let dead = try deadLetter(delivery, error: error)
            let confirms = try result.map { try publishResult($0, replyTo: delivery.replyQueue) } ?? []
            try settle(
                delivery.deliveryTag, action: .ack, after: [.publish(dead)] + confirms, deadLettered: (delivery, error))
        }
    }

    /// Republishes the message, untouched, to the dead-letter exchange with the reason in its headers; only within
    /// ``whenDeadLettersReachable(_:)``.
    func deadLetter(_ delivery: Delivery, error: JobError) throws -> UInt64 {
        let properties = Topology.deadLetterProperties(
            of: delivery.properties, reason: error.code, message: error.message, queue: queue(of: delivery))
        let confirm = try publish(delivery.body, exchange: Topology.deadExchange, routingKey: delivery.routingKey, properties: properties)
        metrics.deadLettered(reason: error.code)
        return confirm
    }

    /// The attempt this delivery is: the one its message carries, one more if the broker redelivered it.
    static func attempt(of delivery: Delivery) -> Int {
        let sent = sentAttempt(of: delivery)
        return delivery.redelivered && sent < Int.max ? sent + 1 : sent
    }

    /// When the job may start: its `notBefore`, or the time a retry's not-before header names (a handler's
    /// ``JobError/retryAfter``), whichever is later; `nil` when neither says.
    static func notBefore(of descriptor: OperationDescriptor, _ delivery: Delivery) -> Date? {
        guard let header = headerDate(Topology.notBeforeHeader, of: delivery) else { return descriptor.notBefore }
        return max(header, descriptor.notBefore ?? header)
    }

    /// When `warren dead requeue` last sent this job round (its `x-warren-requeued-at` header), if it did.
    static func requeuedAt(of delivery: Delivery) -> Date? {
        headerDate(Topology.requeuedAtHeader, of: delivery)
    }

    /// The instant a header holds as an integer of milliseconds since 1970. A time the wire format's dates cannot
    /// hold is no time: ignored, as a header of another type is.
    private static func headerDate(_ name: String, of delivery: Delivery) -> Date? {
        delivery.properties.headers?[name]?.intValue
            .map { Date(timeIntervalSince1970: Double($0) / 1000) }
            .flatMap { WireCoding.dateRange.contains($0.timeIntervalSince1970) ? $0 : nil }
    }

    /// The attempt number the message itself carries (its `x-warren-attempt` header, else 1), not counting a
    /// redelivery. A number below 1 is no attempt number, and counts as none.
    static func sentAttempt(of delivery: Delivery) -> Int {
        guard let sent = delivery.properties.headers?[Topology.attemptHeader]?.intValue, sent >= 1 else { return 1 }
        return Int(sent)
    }

    // MARK: - Results

    func makeResult(
        _ descriptor: OperationDescriptor, delivery: Delivery, status: JobStatus, cancellation: Cancellation? = nil,
        timings: JobTimings, output: JSONValue? = nil, error: JobError? = nil
    ) -> JobResult {
        JobResult(
            jobID: descriptor.id, type: descriptor.type, sequence: descriptor.sequence, key: descriptor.key,
            status: status, output: output, error: error, cancellation: cancellation,
            attempt: Self.attempt(of: delivery), redelivered: delivery.redelivered,
            requeuedAt: Self.requeuedAt(of: delivery), workerID: configuration.workerID, timings: timings)
    }

    /// Publishes a progress report to the progress exchange, and to the job's reply queue if it names one:
    /// transient, best effort, no settlement waits for it.
    func publishProgress(jobID: String, fraction: Double, message: String?) throws {
        guard let job = inFlight[jobID] else { return }
        job.progress = (fraction, message)
        let progress = ProgressMessage(jobID: jobID, fraction: fraction, message: message, workerID: configuration.workerID)
        let body = Array(try WireCoding.encoder.encode(progress))
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: false, correlationID: jobID, type: ProgressMessage.messageType)
        _ = try publish(body, exchange: Topology.progressExchange, routingKey: jobID, properties: properties)
        if let replyTo = job.delivery.replyQueue {
            _ = try publish(body, exchange: "", routingKey: replyTo, properties: properties)
        }
    }

    /// Publishes `result` for whoever waits for it: to the job's reply queue `replyTo` through the default
    /// exchange if the job named one, otherwise to the results exchange. Adds it to this turn's batch for the
    /// results stream, and returns the confirms that settle it.
    /// - Parameter body: The result, encoded, if it is already.
    func publishResult(_ result: JobResult, body: [UInt8]? = nil, replyTo: String?) throws -> [Settlement.Confirm] {
        totals[result.status.rawValue, default: 0] += 1
        defer { try? dependencyEnded(result, offset: nil) }
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: true, correlationID: result.jobID,
            timestamp: UInt64(Date().timeIntervalSince1970), type: result.status.messageType,
            appID: "warren")
        let body = try body ?? result.encoded()
        if !storedResults.hasRoom(for: body.count) { try storeResults(force: true) }
        let confirm = try publish(
            body, exchange: replyTo == nil ? Topology.resultsExchange : "", routingKey: replyTo ?? result.jobID,
            properties: properties)
        storedResults.append(body)
        metrics.jobFinished(result)
        return [.reply(confirm), .storedResults]
    }

    /// Appends the results published since the last call to the `warren.results` stream, as one message, if they
    /// are due (``StoredResults``) or `force` says so: the loop forces it once no job is left in flight whose
    /// result could join them. Batches the broker refused, or did not confirm before the connection died, go first.
    ///
    /// The jobs whose results the batch holds do not wait for its confirm, only for its publication: their acks
    /// leave after it on this connection (``SentBatches``). While many batches wait for their confirms, new ones
    /// hold their jobs' acks until they are confirmed, so that a broker slow to store slows the worker down.
    func storeResults(force: Bool = false) throws {
        while var results = sentBatches.dueForResend() {
            // In as many messages as the broker's largest message takes (it may have told its limit since), without
            // a result it refused alone: its job, not settled, runs again and fails (``endTooLarge``).
            let count = results.count
            results.removeAll { $0.count > maxResultBytes }
            if results.count < count {
                logger.error(
                    "not storing results larger than the broker takes; their jobs end failed (resultTooLarge)",
                    metadata: ["results": "\(count - results.count)"])
            }
            let batches = ResultBatch.split(results, maxBytes: storedResults.maxBytes)
            for batch in batches { try publishBatch(batch) }
            sentBatches.resent(as: batches)
        }
        guard force || storedResults.dueAt.map({ $0 <= .now }) == true, let batches = storedResults.batches else {
            return
        }
        for batch in batches { try publishBatch(batch) }
        let settlements = storedResults.clear()
        let holdsSettlements = sentBatches.count >= Self.maxUnconfirmedBatches
        for batch in batches.dropLast() { sentBatches.sent(batch) }
        // The broker confirms a channel's publishes in order: the last batch's confirm covers those before it.
        sentBatches.sent(batches[batches.count - 1], holding: holdsSettlements ? settlements : [])
        guard !holdsSettlements else { return }
        for settlement in settlements { try countConfirm(of: settlement) }
    }

    /// Result batches waiting for their confirms past which new batches hold their jobs' acks until confirmed.
    static let maxUnconfirmedBatches = 64

    /// Publishes encoded `results` to the `warren.results` stream, on the store channel, as a batch; a single result
    /// whose batch the broker would not take (26 bytes more) goes alone, a message readers take as one result.
    private func publishBatch(_ results: [[UInt8]]) throws {
        let batch = ResultBatch.body(of: results)
        let alone = results.count == 1 && batch.count > brokerMaxMessageBytes
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: true, timestamp: UInt64(Date().timeIntervalSince1970),
            type: alone ? "warren.result" : ResultBatch.messageType, appID: "warren")
        try connection.publish(
            alone ? results[0] : batch, exchange: "", routingKey: Topology.resultsStream, properties: properties,
            channel: Self.storeChannel)
    }

    /// The broker closed the store channel: for a batch larger than it takes (`max_message_size`, before the
    /// worker learnt it), the worker learns its limit, opens the channel again and appends the batches it had not
    /// confirmed again, split to fit: the jobs whose results they hold were acknowledged or will be, and run no
    /// more. Anything else ends the connection, as on any other channel.
    func storeChannelClosed(_ error: AMQPError) throws {
        let known = brokerMaxMessageBytes
        learnBrokerMaxMessageSize(from: error)
        guard brokerMaxMessageBytes < known else { throw error }
        try connection.openChannel(Self.storeChannel)
        try connection.enableConfirms(channel: Self.storeChannel)
        for settlement in sentBatches.channelLost() { try countConfirm(of: settlement) }
        try storeResults()
    }
}

extension Delivery {
    /// The queue a job's result and progress reports go to, through the default exchange: its `reply_to`
    /// property, unless that is absent or empty.
    var replyQueue: String? {
        guard let replyTo = properties.replyTo, !replyTo.isEmpty else { return nil }
        return replyTo
    }
}
