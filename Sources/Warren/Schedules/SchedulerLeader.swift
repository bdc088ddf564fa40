import AMQP
import Foundation

/// The scheduler that leads the schedulers of a broker (virtual host), as it announces itself: the broker does not
/// tell who the active consumer of `warren.schedules` is. The leader keeps one message in the queue
/// ``queue``, `{"host", "pid", "since", "announcedAt", "schedules"}`, and publishes it again every 30 seconds;
/// the queue keeps only the newest, and each expires after 90 seconds.
///
/// ```swift
/// if let leader = try SchedulerLeader.current(url: url) { print("\(leader.host) pid \(leader.pid) leads") }
/// ```
///
/// Thread safety: immutable (a value).
public struct SchedulerLeader: Sendable, Equatable, Codable {
    /// The host the leader runs on.
    public var host: String
    /// Its process id.
    public var pid: Int32
    /// When it started leading.
    public var since: Date
    /// When it last announced itself.
    public var announcedAt: Date
    /// The names of its schedules.
    public var schedules: [String]

    /// The queue that holds the announcement: `warren.schedules.leader`.
    public static let queue = "warren.schedules.leader"
    /// How often the leader announces itself again: 30 s.
    static let refresh = Duration.seconds(30)
    /// How long an announcement lives in the queue: 90 s.
    static let lifetimeMilliseconds = 90_000
    /// The channel a scheduler's state connection announces on, and a reader reads on.
    static let channel: UInt16 = 2

    /// Reads the latest announcement without taking it (a `basic.get`, then put back); `nil` when none is there:
    /// no scheduler leads, or the leader runs a version that does not announce itself.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails.
    public static func current(url: String) throws -> SchedulerLeader? {
        let connection = try BrokerAddresses(url, connectionName: "warren scheduler leader").connect()
        defer { connection.close() }
        do {
            guard try Topology.lookUp(queue, on: connection) != nil else { return nil }
            try connection.openChannel(channel)
            guard let delivery = try connection.get(queue, channel: channel) else { return nil }
            try connection.nack(delivery.deliveryTag, requeue: true, channel: channel)
            return try? WireCoding.decoder.decode(SchedulerLeader.self, from: Data(delivery.body))
        } catch let error as AMQPError {
            throw WarrenError(broker: error)
        }
    }

    /// Declares ``queue`` on ``channel`` and leaves the channel open for ``publish(on:)``; `false` when the broker
    /// refuses (no permission to configure it): the scheduler then leads without announcing itself.
    static func declare(on connection: AMQPConnection) throws -> Bool {
        do {
            try connection.openChannel(channel)
            _ = try connection.declareQueue(
                queue, durable: false,
                arguments: ["x-max-length": .int(1), "x-message-ttl": .int(Int64(lifetimeMilliseconds))],
                channel: channel)
            return true
        } catch let error as AMQPError
            where error.channel == channel && (error.replyCode == 403 || error.replyCode == 406)
        {
            return false
        }
    }

    /// Publishes the announcement on ``channel``, without waiting for a confirm: a lost one is sent again at the
    /// next refresh.
    func publish(on connection: AMQPConnection) throws {
        try connection.publish(
            Array(try WireCoding.encoder.encode(self)), exchange: "", routingKey: Self.queue,
            properties: MessageProperties(contentType: WireCoding.contentType, appID: "warren"), channel: Self.channel)
    }
}

/// When a leading scheduler announces itself (``SchedulerLeader``).
///
/// Thread safety: a value, confined to the scheduler's thread.
struct LeaderAnnouncements {
    /// When the scheduler started leading, since its last connection.
    private var since: Date?
    private var lastAnnounced: ContinuousClock.Instant?
    /// Whether ``SchedulerLeader/queue`` was declared on this connection (`nil`: not tried yet).
    private var declared: Bool?

    /// The scheduler leads from now on, on a new connection or the same.
    mutating func startLeading() {
        self = LeaderAnnouncements(since: Date())
    }

    /// Announces the leader if it has not for ``SchedulerLeader/refresh``.
    mutating func announceIfDue(on connection: AMQPConnection, schedules: [String]) throws {
        guard let since, lastAnnounced.map({ ContinuousClock.now - $0 >= SchedulerLeader.refresh }) ?? true else {
            return
        }
        if declared == nil { declared = try SchedulerLeader.declare(on: connection) }
        guard declared == true else { return }
        let leader = SchedulerLeader(
            host: ProcessInfo.processInfo.hostName, pid: ProcessInfo.processInfo.processIdentifier, since: since,
            announcedAt: Date(), schedules: schedules)
        try leader.publish(on: connection)
        lastAnnounced = .now
    }
}
