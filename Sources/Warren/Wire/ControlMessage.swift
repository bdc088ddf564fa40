import Foundation

/// A message to every worker, published to the `warren.control` exchange and kept in the `warren.control` stream.
/// Version 1 of the format.
///
/// Kinds:
/// - `cancel`: cancel jobs wherever they are, by id (``jobIDs``) and/or every job of ``key`` whose sequence is
///   below ``beforeSequence``.
/// - `cancelAll`: cancel every job whose sequence is below ``beforeSequence``, of ``queue`` or of every queue.
/// - `pause` / `resume`: stop (or start again) taking jobs, on every worker or on ``worker``, from every queue or
///   from ``queue``. Executing jobs go on; jobs waiting in a paused worker go back to the broker.
/// - `resize`: set the width of local queue ``localQueue`` to ``width``, on every worker that has it or on ``worker``,
///   until it restarts. A worker acts on those that come after its start in the control stream: one started later
///   keeps its own widths.
/// - `status`: every live worker publishes a ``WorkerStatus`` to the queue named ``replyTo``; listing up to ``jobs``
///   of the jobs it holds, if set.
/// - `sync`: a marker a worker publishes to itself at start-up; once it reads its own ``token`` back, it has read
///   every earlier control message. Other workers ignore it.
/// - `crashed`: jobs ``jobIDs`` were executing when worker ``worker`` died; ``token`` names the dead worker's
///   journal, so that a report sent twice counts once. A worker that finds the journal of a dead one sends it.
package struct ControlMessage: Sendable, Hashable, Codable {
    package var version: Int
    package var kind: String
    /// For `cancel`: jobs to cancel by id.
    package var jobIDs: [String]
    /// For `cancel`, with ``beforeSequence``: cancel every job of this key whose sequence is lower.
    package var key: String?
    /// For `cancel` with ``key``, and `cancelAll`: jobs with a lower sequence are cancelled.
    package var beforeSequence: UInt64?
    /// For `cancel`: `requested` or `superseded`; copied into the `cancelled` results.
    package var reason: String
    package var sentAt: Date?
    /// For `sync`: the marker's unique token. For `crashed`: the dead worker's journal.
    package var token: String?
    /// For `pause`, `resume` and `resize`: only this worker (by id); all when absent. For `crashed`: the worker that
    /// died.
    package var worker: String?
    /// For `cancelAll`, `pause` and `resume`: only this broker queue; all when absent.
    package var queue: String?
    /// For `status`: the queue to publish the replies to (through the default exchange).
    package var replyTo: String?
    /// For `resize`: the local queue, and its new width.
    package var localQueue: String?
    package var width: Int?
    /// For `status`: how many of the jobs it holds each worker lists in its reply (``WorkerStatus/jobs``); none when
    /// absent.
    package var jobs: Int?

    enum CodingKeys: String, CodingKey {
        case version, kind
        case jobIDs = "jobIds"
        case key, beforeSequence, reason, sentAt, token, worker, queue, replyTo, jobs,
            localQueue, width
    }

    init(
        kind: String, jobIDs: [String] = [], key: String? = nil, beforeSequence: UInt64? = nil,
        reason: String = "requested", token: String? = nil, worker: String? = nil, queue: String? = nil,
        replyTo: String? = nil, jobs: Int? = nil, localQueue: String? = nil, width: Int? = nil
    ) {
        self.version = WireCoding.version
        self.kind = kind
        self.jobIDs = jobIDs
        self.key = key
        self.beforeSequence = beforeSequence
        self.reason = reason
        self.sentAt = Date()
        self.token = token
        self.worker = worker
        self.queue = queue
        self.replyTo = replyTo
        self.jobs = jobs
        self.localQueue = localQueue
        self.width = width
    }

    /// Cancels jobs by id.
    package static func cancel(jobIDs: [String]) -> ControlMessage {
        ControlMessage(kind: "cancel", jobIDs: jobIDs)
    }

    /// Cancels every job of `key` whose sequence is below `sequence`: a newer job supersedes them.
    package static func supersede(key: String, before sequence: UInt64) -> ControlMessage {
        ControlMessage(kind: "cancel", key: key, beforeSequence: sequence, reason: "superseded")
    }

    /// Cancels every job below `sequence`, of `queue` or of every queue: in the broker, waiting and executing.
    package static func cancelAll(before sequence: UInt64, queue: String? = nil) -> ControlMessage {
        ControlMessage(kind: "cancelAll", beforeSequence: sequence, queue: queue)
    }

    /// Pauses taking jobs: on every worker or one, from every queue or one.
    package static func pause(worker: String? = nil, queue: String? = nil) -> ControlMessage {
        ControlMessage(kind: "pause", worker: worker, queue: queue)
    }

    /// Resumes what ``pause(worker:queue:)`` paused.
    package static func resume(worker: String? = nil, queue: String? = nil) -> ControlMessage {
        ControlMessage(kind: "resume", worker: worker, queue: queue)
    }

    /// Sets the width of local queue `localQueue` to `width` on every live worker that has it, or on `worker`.
    package static func resize(localQueue: String, width: Int, worker: String? = nil) -> ControlMessage {
        ControlMessage(kind: "resize", worker: worker, localQueue: localQueue, width: width)
    }

    /// Asks every live worker for its ``WorkerStatus``, published to `replyTo`, listing up to `jobs` of the jobs it
    /// holds if set.
    package static func status(replyTo: String, jobs: Int? = nil) -> ControlMessage {
        ControlMessage(kind: "status", replyTo: replyTo, jobs: jobs)
    }

    static func sync(token: String) -> ControlMessage {
        ControlMessage(kind: "sync", token: token)
    }

    /// Reports the jobs that were executing when `worker` died, from its crash journal `journal`.
    static func crashed(jobIDs: [String], worker: String, journal: String) -> ControlMessage {
        ControlMessage(kind: "crashed", jobIDs: jobIDs, token: journal, worker: worker)
    }

    /// The JSON body of the message.
    package func encoded() throws -> [UInt8] {
        Array(try WireCoding.encoder.encode(self))
    }

    /// Decodes a control message body.
    package static func decode(_ body: [UInt8]) throws -> ControlMessage {
        try WireCoding.decoder.decode(ControlMessage.self, from: Data(body))
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        kind = try container.decode(String.self, forKey: .kind)
        jobIDs = try container.decodeIfPresent([String].self, forKey: .jobIDs) ?? []
        key = try container.decodeIfPresent(String.self, forKey: .key)
        beforeSequence = try container.decodeIfPresent(UInt64.self, forKey: .beforeSequence)
        reason = try container.decodeIfPresent(String.self, forKey: .reason) ?? "requested"
        sentAt = try container.decodeIfPresent(Date.self, forKey: .sentAt)
        token = try container.decodeIfPresent(String.self, forKey: .token)
        worker = try container.decodeIfPresent(String.self, forKey: .worker)
        queue = try container.decodeIfPresent(String.self, forKey: .queue)
        replyTo = try container.decodeIfPresent(String.self, forKey: .replyTo)
        // Fields added after the first workers: one of the wrong type is left out rather than making the whole
        // message unreadable (a status request then gets the reply it would have had without it).
        jobs = try? container.decodeIfPresent(Int.self, forKey: .jobs)
        localQueue = try? container.decodeIfPresent(String.self, forKey: .localQueue)
        width = try? container.decodeIfPresent(Int.self, forKey: .width)
    }

    /// How many cancelled job ids (and keys) a worker keeps: the oldest are forgotten past that (§4.2).
    package static let cancellationsRemembered = 100_000
    /// The largest control message a worker reads (8 MiB); it ignores larger ones, logged (§4.2).
    package static let maxBytes = 8 << 20
    /// How many job ids a producer puts in one `cancel` message: about 400 KB, far below ``maxBytes``.
    static let idsPerCancel = 10_000

    /// Whether it was sent less than 30 s ago by the receiver's clock, and not more than 30 s ahead of it (a clock
    /// that far ahead, or a forged date, would make a request fresh for as long as the stream keeps it): workers
    /// answer only such `status` requests, and not the older ones they read again from the stream when they start.
    var isFresh: Bool {
        guard let age = sentAt.map({ -$0.timeIntervalSinceNow }) else { return false }
        return age < 30 && age > -30
    }

    /// Why a `status` request's `replyTo` cannot be answered, or `nil`: a name the broker would refuse to route to
    /// (over 255 bytes, the limit of a routing key), or one of RabbitMQ's direct reply-to pseudo-queues
    /// (`amq.rabbitmq.reply-to.…`), whose publish from another connection closes the worker's channel.
    var replyToProblem: String? {
        guard let replyTo else { return "it names no replyTo" }
        if replyTo.isEmpty || replyTo.utf8.count > 255 { return "its replyTo is not 1 to 255 bytes long" }
        if replyTo.hasPrefix("amq.rabbitmq.reply-to") { return "its replyTo is a direct reply-to pseudo-queue" }
        return nil
    }

    /// The cancellation recorded in the results of the jobs this message cancels. Only `superseded` (with a key)
    /// and `requested` come from control messages; any other reason reads as `requested`.
    var cancellation: Cancellation {
        if reason == "superseded", let key, let beforeSequence {
            return Cancellation(
                reason: reason, message: "jobs of key '\(key)' below sequence \(beforeSequence) were cancelled")
        }
        if kind == "cancelAll" {
            return Cancellation(reason: "requested", message: "cancelled by cancel --all")
        }
        return .requested
    }
}
