import AMQP
import Foundation

/// A producer's locks of unique jobs (``JobRequest/uniqueFor``): the locks an enqueue takes before it publishes
/// its jobs, and gives back when they are not enqueued after all (``UniqueLock``).
///
/// A lock is a token in a queue of its own, which holds at most one. Tokens go out on the publish channel, with
/// confirms; the lock queues are declared, and tokens taken back, on ``lockChannel``, which the broker closes when
/// it refuses a declaration.
///
/// Thread safety: confined to the thread of its ``Producer``.
final class UniqueLocks {
    /// The channel for unique jobs' locks, which the broker closes when it refuses a declaration.
    static let lockChannel: UInt16 = 3

    private let link: ProducerConnection
    private let interruption: Producer.Interruption
    private var lockChannelOpen = false

    init(link: ProducerConnection, interruption: Producer.Interruption) {
        self.link = link
        self.interruption = interruption
    }

    private var connection: AMQPConnection { link.connection }

    /// What is wrong with the unique jobs among `requests`, or `nil` when nothing is.
    static func problem(withUnique requests: [JobRequest]) -> String? {
        var keys: Set<String> = []
        for request in requests {
            guard let lifetime = request.uniqueFor else { continue }
            if let problem = UniqueLock.problem(withLifetime: lifetime / .seconds(1))
                ?? OperationDescriptor.problem(withUniqueKey: request.key)
            {
                return "job \(request.id): \(problem)"
            }
            if request.supersede {
                return "job \(request.id): a unique job cannot supersede the jobs of its key, which hold its lock"
            }
            if !keys.insert(request.key!).inserted {
                return "job \(request.id): another job of this call is unique for key '\(request.key!)' too"
            }
            if let wait = request.notBefore?.timeIntervalSinceNow, wait >= lifetime / .seconds(1) {
                return "job \(request.id): its unique lock (uniqueFor \(Int(lifetime / .seconds(1))) s) would expire "
                    + "before the job may start, in \(Int(wait.rounded())) s: give it a uniqueFor longer than its wait"
            }
        }
        return nil
    }

    /// How long `request`'s lock lasts: its ``JobRequest/uniqueFor``, but no longer than a minute past its
    /// deadline, after which it never starts and is cancelled if it executes: a job that can no longer run (one
    /// cancelled while it waits in a queue nobody consumes, say) does not hold its key for the rest of the lease.
    static func lockLifetime(of request: JobRequest) -> Duration {
        guard let deadline = request.deadline else { return request.uniqueFor! }
        let untilDeadline = Duration.milliseconds(Int64(max(deadline.timeIntervalSinceNow, 0) * 1000)) + .seconds(60)
        return max(min(request.uniqueFor!, untilDeadline), .seconds(1))
    }

    /// Takes the lock of each unique job among `requests`, all or none, and returns the jobs that hold one.
    ///
    /// Each token is published with confirms and `mandatory`: a lock queue gone between its declaration and the
    /// publish (unused for 8 days, or deleted by hand) returns the token, which is then declared and published
    /// again.
    /// - Throws: ``WarrenError`` `duplicate` when another job holds a lock (the ones this call took are released
    ///   first); `broker` when the broker refuses otherwise or the connection fails.
    func take(of requests: [JobRequest]) throws -> [JobRequest] {
        var pending = requests.filter { $0.uniqueFor != nil }
        guard !pending.isEmpty else { return [] }
        var held: [JobRequest] = []
        var refused: [JobRequest] = []
        for _ in 0..<3 where !pending.isEmpty {
            var tokens: [(number: UInt64, request: JobRequest)] = []
            for request in pending {
                guard !interruption.isRequested else { break }
                try declareLock(key: request.key!)
                let token = UniqueLock.token(jobID: request.id, lifetime: Self.lockLifetime(of: request))
                let number = try link.publish(
                    token.body, exchange: "", routingKey: UniqueLock.queue(forKey: request.key!),
                    properties: token.properties, mandatory: true)
                tokens.append((number, request))
            }
            let refusedNumbers: Set<UInt64>
            do {
                refusedNumbers = try link.waitForAnswers()
            } catch let error as WarrenError where error.code == .timeout {
                let keys = tokens.map { "'\($0.request.key!)'" }.joined(separator: ", ")
                throw WarrenError(
                    .timeout,
                    "the broker did not confirm the unique lock of \(tokens.count == 1 ? "key" : "keys") \(keys) "
                        + "within 30 s (\(WarrenError.unconfirmedCauses)): no job was enqueued, "
                        + "but the lock may be taken all the same, for a job that does not exist; warren unlock frees it"
                )
            }
            let returned = link.takeReturnedQueues { $0.hasPrefix(UniqueLock.prefix) }
            if interruption.isRequested {
                // No job of the call leaves: the locks taken for them are freed.
                let taken = tokens.filter {
                    !refusedNumbers.contains($0.number) && !returned.contains(UniqueLock.queue(forKey: $0.request.key!))
                }
                try release(of: held + taken.map(\.request))
                throw WarrenError(.interrupted, "interrupted: none of the \(requests.count) jobs was enqueued")
            }
            pending = []
            for (number, request) in tokens {
                if refusedNumbers.contains(number) {
                    refused.append(request)
                } else if returned.contains(UniqueLock.queue(forKey: request.key!)) {
                    pending.append(request)
                } else {
                    held.append(request)
                }
            }
        }
        if !refused.isEmpty || !pending.isEmpty { try release(of: held) }
        if let request = refused.first {
            throw WarrenError(
                .duplicate,
                "job \(request.id) not enqueued: another job of key '\(request.key!)' holds the key's unique lock "
                    + "(queue '\(UniqueLock.queue(forKey: request.key!))'), until it ends or the lock expires"
                    + (requests.count > 1 ? "; no job of this call was enqueued" : ""))
        }
        if let request = pending.first {
            throw WarrenError(
                .broker, "the lock queue of key '\(request.key!)' was deleted each time its token was published")
        }
        return held
    }

    /// Releases the locks `requests` hold, as their jobs' worker would: for jobs that were not enqueued after all.
    func release(of requests: [JobRequest]) throws {
        guard !requests.isEmpty else { return }
        try openLockChannel()
        do {
            for request in requests {
                _ = try UniqueLock.release(
                    key: request.key!, jobID: request.id, on: connection, channel: Self.lockChannel)
            }
        } catch let error as AMQPError where error.channel == Self.lockChannel {
            lockChannelOpen = false
            throw error
        }
    }

    /// Frees the unique lock of `key` by hand, whoever holds it (``Producer/unlock(key:)``).
    /// - Returns: The id of the job that held the lock, or `nil` when the lock was free.
    func unlock(key: String) throws -> String? {
        if let problem = OperationDescriptor.problem(withUniqueKey: key) {
            throw WarrenError(.invalidConfiguration, problem)
        }
        let name = UniqueLock.queue(forKey: key)
        do {
            try openLockChannel()
            guard let token = try connection.get(name, channel: Self.lockChannel) else { return nil }
            try connection.ack(token.deliveryTag, channel: Self.lockChannel)
            return token.properties.messageID ?? String(decoding: token.body, as: UTF8.self)
        } catch let error as AMQPError where error.code == .closed {
            throw ProducerConnection.closedError
        } catch let error as AMQPError {
            if error.channel == Self.lockChannel { lockChannelOpen = false }
            if error.channel == Self.lockChannel && error.replyCode == 404 && !error.isQueueNodeDown { return nil }
            throw WarrenError(error.isQueueNodeDown ? .queueUnreachable : .broker, error.description)
        }
    }

    /// Declares the lock queue of `key` on ``lockChannel``, opened first if need be.
    private func declareLock(key: String) throws {
        try openLockChannel()
        do {
            try UniqueLock.declare(key: key, on: connection, channel: Self.lockChannel)
        } catch let error as AMQPError where error.channel == Self.lockChannel {
            lockChannelOpen = false
            guard error.replyCode == 406, Topology.isInequivalentArguments(error) else { throw error }
            throw WarrenError(
                .broker,
                "queue '\(UniqueLock.queue(forKey: key))' exists, but not as Warren declares a unique job's lock "
                    + "(docs/wire-format.md §2, Unique jobs): \(error.replyText ?? "406 PRECONDITION_FAILED")")
        }
    }

    private func openLockChannel() throws {
        guard !lockChannelOpen else { return }
        try connection.openChannel(Self.lockChannel)
        lockChannelOpen = true
    }
}
