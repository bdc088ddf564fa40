import AMQP
import Foundation

/// Control messages: cancellations reach jobs wherever they are, including jobs not yet delivered.
extension WorkerSession {
    /// Consumes the control stream from its start (a day of control messages), and reads it up to a marker this
    /// worker publishes, so that every cancellation sent before it started is known before its first job arrives;
    /// then looks for dead workers' journals, which the reports read meanwhile may have dealt with already.
    func consumeControl() throws {
        try readControlToItsEnd()
        // A stop that came meanwhile is not held up by what follows, which a blocked connection makes wait.
        guard !stopIsPending else { return }
        try findDeadWorkers()
        try reportCrashes()
    }

    /// Whether ``Worker/stop()`` was called and the broker thread has not handled it yet.
    var stopIsPending: Bool {
        worker.mailbox.contains(where: \.isStop)
    }

    private func readControlToItsEnd() throws {
        readingControlBacklog = true
        defer {
            readingControlBacklog = false
            if !pausedQueues.isEmpty {
                logger.info(
                    "starting paused (a warren pause of the last day; warren resume takes it back)",
                    metadata: ["queues": .array(pausedQueues.sorted().map { "\($0)" })])
            }
        }
        try connection.openChannel(Self.controlChannel)
        try Topology.declareControl(on: connection, channel: Self.controlChannel)
        try connection.qos(prefetchCount: 500, channel: Self.controlChannel)
        try connection.consume(
            Topology.controlStream, arguments: ["x-stream-offset": "first"], channel: Self.controlChannel)
        let token = UUID().uuidString
        _ = try publish(
            try ControlMessage.sync(token: token).encoded(), exchange: Topology.controlExchange, routingKey: "",
            properties: MessageProperties(contentType: WireCoding.contentType, persistent: true))
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, !stopIsPending {
            while let event = try connection.nextEvent() {
                switch event {
                case .delivery(let delivery) where delivery.channel == Self.controlChannel:
                    if try handleControl(delivery) == token {
                        if controlStartOffset == nil { controlStartOffset = delivery.streamOffset }
                        return
                    }
                case .channelClosed(let error):
                    throw error
                default:
                    break
                }
            }
            connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(100))
        }
        guard !stopIsPending else { return }
        logger.warning("did not read the control stream to its end within 30 s; starting anyway")
    }

    /// Applies a control message; returns the token of a `sync` marker.
    @discardableResult
    func handleControl(_ delivery: Delivery) throws -> String? {
        try connection.ack(delivery.deliveryTag, channel: Self.controlChannel)
        // Every worker reads every control message, again at each start for a day: one of tens of megabytes (a
        // million ids) would cost each of them hundreds of megabytes, and seconds at each start.
        guard delivery.body.count <= ControlMessage.maxBytes else {
            logger.warning(
                "ignoring a control message larger than \(ControlMessage.maxBytes) bytes",
                metadata: ["bytes": "\(delivery.body.count)"])
            return nil
        }
        let message: ControlMessage
        do {
            message = try WireCoding.decoder.decode(ControlMessage.self, from: Data(delivery.body))
        } catch {
            logger.warning("ignoring an unreadable control message", metadata: ["error": "\(error)"])
            return nil
        }
        guard message.version == WireCoding.version else {
            logger.warning("ignoring control message of version \(message.version)")
            return nil
        }
        switch message.kind {
        case "cancel", "cancelAll":
            cancellations.record(message)
            // The message's own ids count too: past the registry's capacity (a message of more than 100,000 ids)
            // its first ones are forgotten as soon as recorded, and a job this worker holds must still see them.
            let named = message.jobIDs.isEmpty ? [] : Set(message.jobIDs)
            // A job cancelled already (its time limit, an earlier message) keeps its first cancellation.
            let cancelled = inFlight.values.compactMap { job -> (InFlightJob, Cancellation)? in
                guard !job.operation.job.isCancelled else { return nil }
                let cancellation =
                    cancellations.cancellation(of: job.descriptor, queue: job.queue)
                    ?? (named.contains(job.descriptor.id) ? message.cancellation : nil)
                return cancellation.map { (job, $0) }
            }
            // Jobs that have not started go first, and the log lines after: a cancelled executing job frees its
            // place in its local queue, where a job waiting behind it would start before its own cancellation.
            var executing: [(InFlightJob, Cancellation)] = []
            for (job, cancellation) in cancelled {
                if job.operation.hasStarted {
                    executing.append((job, cancellation))
                } else {
                    job.operation.cancel(cancellation)
                }
            }
            for (job, cancellation) in executing { job.operation.cancel(cancellation) }
            for (job, cancellation) in cancelled {
                job.operation.job.logger.info("cancelling job", metadata: ["reason": "\(cancellation.reason)"])
            }
        case "pause", "resume":
            guard message.worker == nil || message.worker == configuration.workerID else { return nil }
            let scope = message.queue.map { [$0] } ?? configuration.queues
            for queue in scope where configuration.queues.contains(queue) {
                try setPaused(message.kind == "pause", queue: queue)
            }
        case "resize":
            // Only those after this worker's start in the stream, whatever the clocks say: one started later keeps
            // its own widths, and one that reconnects reads the same ones again, in order, and ends where it was.
            guard message.worker == nil || message.worker == configuration.workerID,
                let start = controlStartOffset, let offset = delivery.streamOffset, offset > start
            else { return nil }
            try resize(message)
        case "status":
            // A request replayed from the stream at start-up is long answered: only fresh ones get a reply.
            guard let replyTo = message.replyTo, message.isFresh else { return nil }
            // A reply the broker would refuse (or crash the channel on) costs the worker its connection, and the
            // request, replayed from the stream, would do it again.
            if let problem = message.replyToProblem {
                logger.warning("ignoring a status request: \(problem)")
                return nil
            }
            try answerStatus(replyTo: replyTo, listingJobs: message.jobs)
        case "sync":
            return message.token
        case "crashed":
            crashReported(message)
        default:
            logger.warning("ignoring control message of unknown kind '\(message.kind)'")
        }
        return nil
    }

    /// Pauses or resumes taking jobs from `queue`. Pausing stops its consumer and sends the jobs from it that have
    /// not started back to the broker (for other workers, or for later); executing ones go on.
    func setPaused(_ paused: Bool, queue: String) throws {
        guard paused != pausedQueues.contains(queue) else { return }
        if paused {
            pausedQueues.insert(queue)
            logger.log(level: readingControlBacklog ? .debug : .info, "paused", metadata: ["queue": "\(queue)"])
            try cancelConsumers(of: queue)
            consumerLimits[queue] = nil
            for job in inFlight.values where job.queue == queue && !job.operation.hasStarted {
                job.operation.cancel(Cancellation(reason: "paused", message: "the worker was paused on \(queue)"))
            }
        } else {
            pausedQueues.remove(queue)
            logger.log(level: readingControlBacklog ? .debug : .info, "resumed", metadata: ["queue": "\(queue)"])
            try startConsumer(of: queue)
        }
    }

    /// Warns when a prefetch given explicitly (`--prefetch`) is below the local queues' total width: no more jobs
    /// than the prefetch run at once, however wide the queues (a resize beyond it changes nothing).
    func warnIfPrefetchBelowWidths() {
        let widths = localQueues.values.reduce(0) { $0 + $1.width }
        guard let prefetch = configuration.prefetch, prefetch < widths else { return }
        logger.warning(
            "the prefetch is below the local queues' total width: at most \(prefetch) jobs run at once",
            metadata: ["prefetch": "\(prefetch)", "totalWidth": "\(widths)"])
    }

    /// Sets a local queue's width, as `warren resize` asks; the prefetch follows when it follows the widths.
    private func resize(_ message: ControlMessage) throws {
        guard let name = message.localQueue, let local = localQueues[name] else {
            // A message to every worker names a local queue some of them may not have.
            guard message.worker != nil else { return }
            return logger.warning(
                "ignoring a resize of local queue '\(message.localQueue ?? "")', which this worker does not have",
                metadata: ["localQueues": .array(localQueues.keys.sorted().map { "\($0)" })])
        }
        guard let width = message.width, LocalQueue.widths.contains(width) else {
            let (least, most) = (LocalQueue.widths.lowerBound, LocalQueue.widths.upperBound)
            let asked = message.width.map(String.init) ?? "none"
            return logger.warning("ignoring a resize of local queue '\(name)' to width \(asked): expected \(least) to \(most)")
        }
        guard width != local.width else { return }
        logger.info("resizing local queue", metadata: ["localQueue": "\(name)", "from": "\(local.width)", "to": "\(width)"])
        local.resize(to: width)
        guard configuration.prefetch == nil else { return warnIfPrefetchBelowWidths() }
        basePrefetch = min(localQueues.values.reduce(0) { $0 + $1.width }, 65_535)
        consumerLimitsMayFallShort()
        try updatePrefetch()
    }
}
