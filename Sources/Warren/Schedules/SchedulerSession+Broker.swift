import AMQP
import Foundation

/// The state connection: publishing with confirms, reading deliveries, losing and finding the broker.
extension SchedulerSession {
    /// Publishes `state` into `warren.schedules` and waits for the broker's confirm.
    /// - Throws: ``WarrenError`` (`broker`) when the broker refuses it, the queue is gone, or the connection fails.
    func publish(_ state: ScheduleState) throws {
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: true, type: ScheduleState.messageType, appID: "warren")
        try publishConfirmed(
            try state.encoded(), exchange: "", routingKey: Topology.scheduleQueue, properties: properties,
            mandatory: true)
    }

    /// Republishes a message of `warren.schedules` that is no state to the dead-letter exchange, with `problem` in
    /// its headers (reason `malformedMessage`), and waits for the broker's confirm.
    func deadLetter(_ delivery: Delivery, problem: String) throws {
        let properties = Topology.deadLetterProperties(
            of: delivery.properties, reason: "malformedMessage", message: problem, queue: Topology.scheduleQueue)
        try publishConfirmed(
            delivery.body, exchange: Topology.deadExchange, routingKey: delivery.routingKey, properties: properties)
    }

    private func publishConfirmed(
        _ body: [UInt8], exchange: String, routingKey: String, properties: MessageProperties, mandatory: Bool = false
    ) throws {
        let confirmed = try brokerCall {
            try states.publish(
                body, exchange: exchange, routingKey: routingKey, properties: properties, mandatory: mandatory)
            return try pump.dispatch(until: .now + .seconds(30), wakeUp: scheduler.mailbox.wakeUp) {
                guard !states.awaiting.isEmpty else { return true }
                // The broker may hold the confirm for long (a memory alarm): a stop does not wait for it.
                if stopRequested() { throw SchedulerStopped() }
                return false
            }
        }
        if states.takeAnswers().contains(where: { !$0.isAck }) {
            throw WarrenError(.broker, "the broker refused a publish (basic.nack)")
        }
        guard confirmed else {
            throw WarrenError(.timeout, "the broker did not confirm a publish to '\(exchange)' within 30 s")
        }
    }

    /// Handles every event the broker sent: state messages go to ``arrivals``, confirms to ``states``.
    func readEvents() throws {
        try brokerCall { _ = try pump.dispatch() }
    }

    /// Routes the events of the state connection, a new one included: state messages to ``arrivals``, confirms to
    /// ``states``, the broker's blocking to the health; a returned state or a cancelled consumer is thrown.
    func routeEvents() {
        let route = ChannelRoute(onDelivery: { [unowned self] in arrivals.append($0) })
        route.onConfirm = { [unowned states] in states.confirmed(upTo: $0, multiple: $1, ack: $2) }
        route.onReturn = { _ in
            throw WarrenError(.broker, "queue '\(Topology.scheduleQueue)' is gone (the state came back)")
        }
        route.onConsumerCancel = { _ in
            throw WarrenError(.broker, "the broker cancelled the consumer of '\(Topology.scheduleQueue)'")
        }
        pump.route(Self.channel, to: route)
        pump.blockingHandler = { [unowned self] in scheduler.health.blocked($0) }
    }

    /// Closes the producer's connection, on which the broker may have closed the channel, and opens another.
    /// - Throws: ``WarrenError`` (`broker`) when no broker address accepts one.
    func replaceProducer() throws {
        producer.close()
        producer = try Self.makeProducer(configuration)
    }

    /// Whether ``Scheduler/stop()`` was called; empties the mailbox.
    func stopRequested() -> Bool {
        Self.stopRequested(scheduler)
    }

    /// Whether ``Scheduler/stop()`` was called on `scheduler`; empties its mailbox.
    static func stopRequested(_ scheduler: Scheduler) -> Bool {
        scheduler.mailbox.drain().contains { if case .stop = $0 { true } else { false } }
    }

    /// Runs `body`, with the library's errors as ``WarrenError`` (`broker`).
    func brokerCall<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
    }

    /// Thrown out of a wait when ``Scheduler/stop()`` was called meanwhile.
    struct SchedulerStopped: Error {}

    /// Closes both connections after `error`, stops leading, and connects again with exponential backoff and
    /// jitter, trying each broker address in turn. Returns `false` when the scheduler stopped first.
    func reconnect(after error: any Error) -> Bool {
        logger.warning(
            "scheduler lost the broker; reconnecting",
            metadata: ["error": "\(error)", "leading": "\(isLeading)"])
        connection.close()
        producer.close()
        scheduler.health.disconnected(error)
        isLeading = false
        metrics.leading(false)
        lastPublished = nil
        heldTag = nil
        due = [:]
        retries = [:]
        arrivals = []
        var delay = Duration.milliseconds(100)
        var attempt = 0
        while true {
            let wait = delay * Double.random(in: 0.75...1.25)
            scheduler.mailbox.sleep {
                scheduler.health.sleeping(for: wait)
                scheduler.mailbox.wakeUp.wait(timeout: wait)
            }
            scheduler.health.turning()
            if stopRequested() { return false }
            attempt += 1
            do {
                (connection, producer) = try Self.connect(scheduler)
                (pump, states) = (AMQPEventPump(connection), ConfirmChannel(Self.channel, on: connection))
                routeEvents()
                try start()
                logger.info("scheduler reconnected", metadata: ["attempts": "\(attempt)"])
                return true
            } catch is SchedulerStopped {
                // Stopped while its first publish waited for a confirm (a broker blocking publishers).
                return false
            } catch {
                connection.close()
                producer.close()
                scheduler.health.disconnected(error)
                logger.warning("scheduler cannot reconnect", metadata: ["error": "\(error)"])
            }
            delay = min(delay * 2, configuration.maxReconnectDelay)
        }
    }
}
