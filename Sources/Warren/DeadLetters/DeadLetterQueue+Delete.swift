import AMQP

/// Deleting dead letters for good, as `warren dead delete` does.
extension DeadLetterQueue {
    /// Deletes every dead letter of the jobs whose ids are in `jobIDs`, a job's later letters (a duplicate
    /// delivery's) included; returns them. Takes up to `limit` letters and holds them until it is done: those of
    /// other jobs go back to the queue, which may change their order. The copies the broker made for workers
    /// (`warren.dead.watch`) stay: a worker that takes one answers its job with a `failed` result, which it is.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails: the letters not yet deleted stay.
    public func delete(jobIDs: Set<String>, limit: Int = 100_000) throws -> [DeadLetter] {
        do {
            // All held until the end: a letter put back at once would be the next one taken.
            var taken: [Delivery] = []
            while taken.count < limit, let delivery = try connection.get(Topology.deadQueue, channel: Self.channel) {
                taken.append(delivery)
            }
            var deleted: [DeadLetter] = []
            for delivery in taken {
                let letter = DeadLetter(delivery)
                guard let id = letter.jobID, jobIDs.contains(id) else { continue }
                try connection.ack(delivery.deliveryTag, channel: Self.channel)
                deleted.append(letter)
            }
            if deleted.count < taken.count, let last = taken.last {
                try connection.nack(last.deliveryTag, multiple: true, requeue: true, channel: Self.channel)
            }
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
