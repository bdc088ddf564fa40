import Foundation
import Logging
import ServiceLifecycle

/// Enqueues the jobs of ``Schedule``s at their ticks: Celery beat, or Sidekiq's periodic jobs, over RabbitMQ.
///
/// Run a scheduler in as many processes as you like (`warren schedule FILE`, `warren worker --schedule FILE`, or
/// your own): one leads and enqueues, the others stand by, and one of them leads within moments of the leader's
/// connection closing. The broker decides who leads: each scheduler consumes the queue `warren.schedules` (single
/// active consumer), which holds one message, the state of the schedules (the ticks dealt with); the consumer the
/// broker gives it to leads, and keeps it unacknowledged until it publishes the next state. A tick that no
/// scheduler was running for is enqueued once, late, when one runs again (see ``Schedule/maxLateness``).
///
/// A tick's job is published, and confirmed, before the state that records it: a leader that dies between the
/// two leaves that tick to the next leader, which enqueues it again, with the same job id. Every scheduler of a
/// broker (virtual host) should have the same schedules: only the leader's are enqueued.
///
/// ```swift
/// let every5 = Schedule(name: "cleanup", recurrence: .cron(try CronExpression("*/5 * * * *"), .gmt), type: "cleanup")
/// let scheduler = try Scheduler(configuration: .init(url: "amqp://guest:guest@localhost/%2F", schedules: [every5]))
/// try await scheduler.run()   // until scheduler.stop(), or the service group's graceful shutdown
/// ```
///
/// A scheduler is a `Service`: run it in a `ServiceGroup`, whose graceful shutdown stops it as ``stop()`` does.
///
/// Thread safety: immutable, but for the mailbox and the health, which are locked. Its broker connections live on the
/// thread that runs it and nowhere else.
public final class Scheduler: Service, Sendable {
    /// How a scheduler connects and what it enqueues.
    public struct Configuration: Sendable {
        /// Broker URL, `amqp://user:password@host:port/vhost`; several, separated by commas, are tried in turn.
        public var url: String
        /// What to enqueue, and when; names unique.
        public var schedules: [Schedule]
        /// Whether `warren.schedules`, and job queues this scheduler has to create, are quorum queues, replicated on
        /// the nodes of a cluster. Queues that exist are used as they are. Default: `false`.
        public var quorumQueues = false
        /// Whether job queues this scheduler has to create are priority queues. Default: `false`.
        public var priorityQueues = false
        /// Where the sequence numbers of its jobs come from. Default: the host-wide ``SequenceStore``.
        public var sequences = SequenceStore()
        /// The longest wait between reconnection attempts; waits double from 100 ms up to it. From 100 ms to an hour.
        /// Default: 30 s.
        public var maxReconnectDelay: Duration = .seconds(30)
        /// How long to keep trying, at start, while no broker address accepts a connection (nothing listens yet),
        /// before ``run()`` throws. A refused password or an untrusted certificate throws at once. Zero: try once.
        /// Default: 60 s.
        public var brokerWaitAtStart: Duration = .seconds(60)
        /// Where the scheduler logs. Default: a logger labelled `warren.scheduler`.
        public var logger = Logger(label: "warren.scheduler")

        public init(url: String, schedules: [Schedule]) {
            self.url = url
            self.schedules = schedules
        }
    }

    public let configuration: Configuration
    let brokers: BrokerAddresses
    let mailbox = Mailbox<SchedulerMessage>()
    /// How the broker thread is doing: whether it has its broker, and whether it still turns (a health endpoint's
    /// view; `warren schedule --metrics-port` serves it at `/livez` and `/readyz`).
    public let health = BrokerThreadHealth()

    /// Checks the configuration.
    /// - Throws: ``WarrenError``: `invalidConfiguration` for a bad URL, both kinds of queue or a reconnect delay out
    ///   of range, `invalidSchedule`
    ///   for no schedules, a name given twice or a schedule that cannot run (``Schedule/problem``).
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        brokers = try BrokerAddresses(
            configuration.url, connectionName: "warren scheduler \(ProcessInfo.processInfo.processIdentifier)")
        if let problem = Topology.problem(
            creatingPriorityQueues: configuration.priorityQueues, quorumQueues: configuration.quorumQueues)
        {
            throw WarrenError(.invalidConfiguration, problem)
        }
        if let problem = BrokerAddresses.problem(maxReconnectDelay: configuration.maxReconnectDelay) {
            throw WarrenError(.invalidConfiguration, problem)
        }
        if configuration.brokerWaitAtStart < .zero {
            throw WarrenError(
                .invalidConfiguration, "broker wait at start \(configuration.brokerWaitAtStart) must not be negative")
        }
        guard !configuration.schedules.isEmpty else { throw WarrenError(.invalidSchedule, "no schedules to run") }
        var names: Set<String> = []
        for schedule in configuration.schedules {
            if let problem = schedule.problem { throw WarrenError(.invalidSchedule, problem) }
            guard names.insert(schedule.name).inserted else {
                throw WarrenError(.invalidSchedule, "schedule name '\(schedule.name)' is given twice")
            }
        }
    }

    /// Connects and schedules until ``stop()``; the calling thread becomes the scheduler's broker thread.
    ///
    /// A lost connection is reopened with backoff, trying each broker address in turn, for as long as it takes.
    /// - Throws: ``WarrenError`` (`broker`) when no broker address accepts the first connection: at once for a
    ///   refused password or an untrusted certificate, after ``Configuration/brokerWaitAtStart`` when none listens;
    ///   at once when the broker refuses, on the first connection, to let it declare or consume `warren.schedules`
    ///   or the dead letters (no permission, a virtual host's limit).
    public func runOnCurrentThread() throws {
        let session: SchedulerSession
        do {
            session = try SchedulerSession(scheduler: self)
        } catch is SchedulerSession.SchedulerStopped {
            return
        }
        session.run()
    }

    /// Connects and schedules until ``stop()``, on a thread of its own. A service group's graceful shutdown, or
    /// cancelling the task that awaits it, stops the scheduler as ``stop()`` does; it returns once it stopped.
    /// - Throws: ``WarrenError`` (`broker`) when no broker address accepts the first connection (see
    ///   ``runOnCurrentThread()``).
    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await BrokerThread.run(
                named: "warren.scheduler", { [self] in try runOnCurrentThread() }, onCancel: stop)
        } onGracefulShutdown: { [self] in
            stop()
        }
    }

    /// Stops: closes the connections, so that another scheduler leads. Safe from any thread.
    public func stop() {
        mailbox.post(.stop)
    }
}

/// What reaches the scheduler's thread from elsewhere.
enum SchedulerMessage: Sendable {
    case stop
}
