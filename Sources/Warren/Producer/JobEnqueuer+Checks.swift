import AMQP
import Foundation

/// What an enqueue checks before it publishes anything: the jobs themselves, then what the broker holds.
extension JobEnqueuer {
    /// What is wrong with the jobs of a call, in the order they are published, or `nil` when nothing is that can
    /// be told without the broker. The first problem found is told, checks in this order: ids, queue names, types,
    /// unique jobs, time limits, reply queues, dates and attempts, deadlines.
    static func problem(with ordered: [JobRequest]) -> String? {
        if let problem = ordered.lazy.compactMap({ OperationDescriptor.problem(withID: $0.id) }).first {
            return problem
        }
        if let problem = ordered.lazy.compactMap({ Topology.problem(withJobQueue: $0.queue) }).first {
            return problem
        }
        if let request = ordered.first(where: { OperationDescriptor.problem(withType: $0.type) != nil }) {
            return "job \(request.id): \(OperationDescriptor.problem(withType: request.type)!)"
        }
        if let problem = UniqueLocks.problem(withUnique: ordered) {
            return problem
        }
        for request in ordered {
            guard let limit = request.timeLimit,
                let problem = OperationDescriptor.problem(withTimeLimit: limit / .seconds(1))
            else { continue }
            return "job \(request.id): \(problem)"
        }
        if let request = ordered.first(where: { $0.replyTo.map { !(1...255).contains($0.utf8.count) } ?? false }) {
            return "job \(request.id): a reply queue name must be 1 to 255 bytes long"
        }
        if let request = ordered.first(where: { $0.replyTo.map(Topology.isOwnQueue) ?? false }) {
            return "job \(request.id): reply queue '\(request.replyTo!)' is one of Warren's own queues"
        }
        for request in ordered {
            if let date = [request.deadline, request.notBefore].compactMap({ $0 }).first(where: {
                !WireCoding.dateRange.contains($0.timeIntervalSince1970)
            }) {
                return "job \(request.id): \(date == request.deadline ? "deadline" : "notBefore") is outside the "
                    + "years 0001 to 9999, which the wire format's dates cover"
            }
            if let attempts = request.maxAttempts, attempts < 1 {
                return "job \(request.id): maxAttempts \(attempts) must be at least 1"
            }
        }
        if let request = ordered.first(where: { request in
            guard let deadline = request.deadline, let notBefore = request.notBefore else { return false }
            return deadline <= notBefore
        }) {
            return "job \(request.id): its deadline is not after its notBefore: it could never start"
        }
        return nil
    }

    /// Refuses jobs whose reply queue does not exist: the broker would drop their results and progress reports
    /// (only the `warren.results` stream would keep the results). A queue exclusive to another connection exists.
    func checkReplyQueuesExist(_ requests: [JobRequest]) throws {
        for request in requests {
            guard let queue = request.replyTo, !knownReplyQueues.contains(queue) else { continue }
            guard try Topology.queueExists(queue, on: link.connection) else {
                throw WarrenError(
                    .invalidConfiguration,
                    "job \(request.id): reply queue '\(queue)' does not exist; declare it before enqueueing jobs "
                        + "that name it (the broker would drop their results)")
            }
            knownReplyQueues.insert(queue)
        }
    }

    /// Refuses jobs for a queue that is a stream (one declared with no other argument: ``Topology/isStream(_:on:)``):
    /// a stream hands every job to every worker, and a worker does not consume one, so the job would never run.
    func checkNoStreams(_ requests: [JobRequest]) throws {
        for queue in Set(requests.map(\.queue)).subtracting(declaredQueues).sorted() {
            guard try Topology.isStream(queue, on: link.connection) else { continue }
            throw WarrenError(
                .invalidConfiguration,
                "queue '\(queue)' is a stream, which hands every job to every worker: workers do not consume one; "
                    + "send jobs to a classic or quorum queue")
        }
    }

    func declareJobQueue(_ queue: String) throws {
        guard !declaredQueues.contains(queue) else { return }
        try Topology.declareJobQueue(
            queue, priorities: priorityQueues, quorum: quorumQueues, on: link.connection,
            channel: ProducerConnection.publishChannel)
        declaredQueues.insert(queue)
    }
}
