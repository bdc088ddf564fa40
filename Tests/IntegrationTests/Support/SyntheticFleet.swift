import AMQP
import Foundation
import Synchronization
import Warren

/// Many workers that only answer status requests: one connection reads the control stream as workers do, and
/// answers each fresh `status` request with one reply per synthetic worker, each holding `jobsPerWorker` waiting jobs
/// and listing as many as the request asks for. For the dashboard's measurements with a large fleet.
///
/// Thread safety: locked; the connection is confined to the fleet's thread.
final class SyntheticFleet: Sendable {
    let workers: Int
    let jobsPerWorker: Int
    let queue: String
    private let stopped = Atomic(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Status requests answered.
    let answered = Atomic(0)

    init(workers: Int, jobsPerWorker: Int, queue: String) throws {
        self.workers = workers
        self.jobsPerWorker = jobsPerWorker
        self.queue = queue
        let url = try TestEnvironment.brokerURL
        let ready = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        // The connection is made, used and closed on the fleet's thread alone.
        let thread = Thread { [self] in
            defer { finished.signal() }
            let connection: AMQPConnection
            do {
                connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
                try connection.openChannel(1)
                try connection.qos(prefetchCount: 100, channel: 1)
                try connection.consume(Topology.controlStream, arguments: ["x-stream-offset": "next"], channel: 1)
            } catch {
                failure.withLock { $0 = error }
                ready.signal()
                return
            }
            ready.signal()
            serve(connection)
            connection.close()
        }
        thread.start()
        ready.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        finished.wait()
    }

    private func serve(_ connection: AMQPConnection) {
        while !stopped.load(ordering: .relaxed) {
            do {
                guard let event = try connection.nextEvent() else {
                    _ = connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(100))
                    continue
                }
                guard case .delivery(let delivery) = event else { continue }
                try connection.ack(delivery.deliveryTag, channel: 1)
                guard let message = try? ControlMessage.decode(delivery.body), message.kind == "status",
                    let replyTo = message.replyTo, let sentAt = message.sentAt, -sentAt.timeIntervalSinceNow < 30
                else { continue }
                for index in 0..<workers {
                    try connection.publish(
                        Array(reply(worker: index, listing: message.jobs ?? 0).utf8), exchange: "", routingKey: replyTo,
                        properties: MessageProperties(contentType: "application/json"), channel: 1)
                }
                answered.add(1, ordering: .relaxed)
            } catch {
                return
            }
        }
    }

    /// A status reply as a worker writes it (docs/wire-format.md, the status reply).
    private func reply(worker index: Int, listing: Int) -> String {
        let now = Date().timeIntervalSince1970
        let listed = min(listing, jobsPerWorker)
        let jobs = (0..<listed).map { job in
            """
            {"id":"synthetic-\(index)-\(job)","type":"sum","state":"waiting","queue":"\(queue)","localQueue":"default",\
            "priority":"normal","key":"key-\(job % 7)","sequence":\(1_000_000 + job),"attempt":1,"heldSeconds":\(job)}
            """
        }
        return """
            {"version":1,"workerId":"synthetic-\(index)","host":"host-\(index % 10)","pid":\(10_000 + index),\
            "startedAt":\(now - 3600),"uptimeSeconds":3600,"queues":["\(queue)"],"pausedQueues":[],"prefetch":8,\
            "localQueues":[{"name":"default","width":4,"executing":0,"waiting":\(jobsPerWorker)}],\
            "totals":{"succeeded":\(index * 10),"failed":\(index),"cancelled":0},\
            "jobs":[\(jobs.joined(separator: ","))],"moreJobs":\(jobsPerWorker - listed)}
            """
    }
}
