import AMQP
import Foundation

/// The lock a unique job holds (``OperationDescriptor/unique``), one per key, kept by the broker: a durable classic
/// queue named `warren.unique.KEY` that holds at most one message, the *token* (`x-max-length` 1, `x-overflow`
/// `reject-publish`).
///
/// A producer takes the lock by publishing a token with publisher confirms: while another token is there, the
/// broker refuses it (`basic.nack`), and the job is not enqueued. The token names its job (`message_id`) and
/// expires after the lock's lifetime (`expiration`), so a lock whose job was lost frees itself. The worker that ends
/// the job for good takes its token back (`basic.get`, then `basic.ack`); a token of another job (this one's lock
/// expired, and another job took it) goes back untouched. The queue stays, empty, until it has gone unused for
/// `lease`: deleting it could lose a token published at that moment, which the broker confirms all the same.
/// See docs/wire-format.md §2, *Unique jobs*.
///
/// Thread safety: stateless; the connection passed in is confined to the calling thread.
package enum UniqueLock {
    /// The start of every lock queue's name.
    package static let prefix = "warren.unique."
    /// How long a lock may be taken for, in seconds: 1 second to 7 days.
    package static let lifetimeRange = 1.0...604_800.0
    /// How long a lock queue lives unused (`x-expires`), in milliseconds: a day longer than the longest lock, so
    /// that only a queue whose token expired goes.
    static let lease: Int64 = 8 * 86_400_000
    /// The `type` property of a token.
    static let tokenType = "warren.unique-lock"

    /// The queue that is the lock of `key`.
    package static func queue(forKey key: String) -> String { prefix + key }

    /// What is wrong with `seconds` as a lock's lifetime, or `nil` when it is fine.
    package static func problem(withLifetime seconds: Double) -> String? {
        guard !lifetimeRange.contains(seconds) else { return nil }
        return "a unique job's lock lasts from 1 second to 7 days (1 to 604800 seconds); got \(seconds) seconds"
    }

    /// The arguments every party declares a lock queue with.
    static let arguments: AMQPTable = [
        "x-max-length": .int(1), "x-overflow": "reject-publish", "x-expires": .int(lease),
    ]

    /// Declares the lock queue of `key` (durable, ``arguments``), or finds it.
    /// - Throws: `AMQPError` when the broker refuses (406 for a queue of that name declared otherwise, which closes
    ///   `channel`), or the connection fails.
    static func declare(key: String, on connection: AMQPConnection, channel: UInt16) throws {
        try connection.declareQueue(queue(forKey: key), arguments: arguments, channel: channel)
    }

    /// The token that takes the lock for job `jobID` for `lifetime`: persistent, its body the job id.
    static func token(jobID: String, lifetime: Duration) -> (body: [UInt8], properties: MessageProperties) {
        let milliseconds = max(Int64((lifetime / .milliseconds(1)).rounded(.up)), 1)
        let properties = MessageProperties(
            contentType: "text/plain", persistent: true, expiration: String(milliseconds), messageID: jobID,
            timestamp: UInt64(Date().timeIntervalSince1970), type: tokenType, appID: "warren")
        return (Array(jobID.utf8), properties)
    }

    /// What releasing a lock found.
    enum Release: Equatable {
        /// The job's token was there, and is gone.
        case released
        /// No token (it expired), or no lock queue (it went unused for ``lease``, or was deleted by hand).
        case free
        /// Another job's token, left where it was: the job's own expired before it ended.
        case heldBy(String?)
        /// The lock queue lives on a cluster node that is down: the token stays until it expires.
        case unreachable
    }

    /// Releases the lock of `key` that job `jobID` holds, on `channel`, which must be open: takes the job's token
    /// back. The broker closes `channel` when the queue is missing; it is open again when this returns.
    /// - Throws: `AMQPError` when the connection fails or the broker refuses otherwise.
    static func release(
        key: String, jobID: String, on connection: AMQPConnection, channel: UInt16
    ) throws -> Release {
        let name = queue(forKey: key)
        let token: Delivery?
        do {
            token = try connection.get(name, channel: channel)
        } catch let error as AMQPError where error.channel == channel && error.replyCode == 404 {
            try connection.openChannel(channel)
            return error.isQueueNodeDown ? .unreachable : .free
        }
        guard let token else { return .free }
        guard token.properties.messageID == jobID else {
            try connection.nack(token.deliveryTag, requeue: true, channel: channel)
            return .heldBy(token.properties.messageID)
        }
        try connection.ack(token.deliveryTag, channel: channel)
        return .released
    }
}
