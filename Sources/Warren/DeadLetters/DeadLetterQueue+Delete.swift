import AMQP

/// Deleting dead letters for good, as `warren dead delete` and the dashboard do.
extension DeadLetterQueue {
    /// Deletes every dead letter of the jobs whose ids are in `jobIDs`, a job's later letters (a duplicate
    /// delivery's) included; returns them, oldest first. Takes up to `limit` letters and holds them until it is
    /// done: those of other jobs go back to the queue, which may change their order. The copies the broker made for
    /// workers (`warren.dead.watch`) stay: a worker that takes one answers its job with a `failed` result, which it
    /// is.
    ///
    /// ```swift
    /// let removed = try DeadLetterQueue(url: url).delete(jobIDs: ["job-42"])
    /// ```
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails: the letters not yet deleted stay.
    public func delete(jobIDs: Set<String>, limit: Int = 100_000) throws -> [DeadLetter] {
        guard !jobIDs.isEmpty else { return [] }
        do {
            // All held until the end: a letter put back at once would be the next one taken.
            var deleted: [DeadLetter] = []
            var lastKept: UInt64?
            var taken = 0
            while taken < limit, let delivery = try connection.get(Topology.deadQueue, channel: Self.channel) {
                taken += 1
                let letter = DeadLetter(delivery)
                if let id = letter.jobID, jobIDs.contains(id) {
                    try connection.ack(delivery.deliveryTag, channel: Self.channel)
                    deleted.append(letter)
                } else {
                    lastKept = delivery.deliveryTag
                }
            }
            // Every letter below the last one kept was kept or acknowledged already.
            if let lastKept { try connection.nack(lastKept, multiple: true, requeue: true, channel: Self.channel) }
            return deleted
        } catch let error as AMQPError {
            throw WarrenError(broker: error)
        }
    }

    /// Deletes every dead letter the queue holds (`queue.purge`); returns how many. Letters another client has taken
    /// and not yet settled stay.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails or the broker refuses.
    public func deleteAll() throws -> Int {
        do {
            return Int(try connection.purgeQueue(Topology.deadQueue, channel: Self.channel))
        } catch let error as AMQPError {
            throw WarrenError(broker: error)
        }
    }
}
