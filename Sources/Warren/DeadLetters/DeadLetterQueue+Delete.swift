import AMQP

extension DeadLetterQueue {
    /// Removes the dead letters of the jobs in `jobIDs` for good: every letter of each that it comes to before it
    /// found one of each, or `limit` letters. The letters of other jobs go back to the queue.
    ///
    /// ```swift
    /// let removed = try DeadLetterQueue(url: url).delete(jobIDs: ["job-42"])
    /// ```
    /// - Parameter limit: The most letters it takes to find them.
    /// - Returns: The letters removed, oldest first.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails: the letters it took stay dead.
    public func delete(jobIDs: Set<String>, limit: Int = 100_000) throws -> [DeadLetter] {
        guard !jobIDs.isEmpty else { return [] }
        var removed: [DeadLetter] = []
        var unfound = jobIDs
        var taken = 0
        // Letters it keeps stay unacknowledged until the end: one put back at once would be the next one taken.
        var lastKept: UInt64?
        do {
            while !unfound.isEmpty, taken < limit,
                let (delivery, _) = try connection.getCounting(Topology.deadQueue, channel: Self.channel)
            {
                taken += 1
                let letter = DeadLetter(delivery)
                if let id = letter.jobID, jobIDs.contains(id) {
                    unfound.remove(id)
                    try connection.ack(delivery.deliveryTag, channel: Self.channel)
                    removed.append(letter)
                } else {
                    lastKept = delivery.deliveryTag
                }
            }
            if let lastKept { try connection.nack(lastKept, multiple: true, requeue: true, channel: Self.channel) }
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
        return removed
    }
}
