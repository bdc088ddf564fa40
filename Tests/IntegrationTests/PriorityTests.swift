import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Priorities {
        let priorities: [JobPriority] = [.normal, .veryLow, .veryHigh, .low, .high]

        @Test("the broker delivers waiting jobs highest priority first (width 1, prefetch 1)")
        func brokerOrder() throws {
            let queue = TestEnvironment.uniqueName("priority-broker")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let jobs = try producer.enqueue(priorities.map { JobRequest(type: "echo", input: .string($0.rawValue), priority: $0, queue: queue) })
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "1"])
            defer { worker.terminate() }
            _ = try tap.waitForResults(jobs.map(\.id))
            let order = tap.arrivedResults.filter { r in jobs.contains { $0.id == r.jobID } }.map { $0.output?.stringValue }
            #expect(order == ["veryHigh", "high", "normal", "low", "veryLow"])
        }

        @Test("a worker's local queue starts ready operations highest priority first (width 1, prefetch 10)")
        func localOrder() throws {
            let queue = TestEnvironment.uniqueName("priority-local")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "10"])
            defer { worker.terminate() }
            // Occupy the only slot, so the others wait in the local queue, delivered in publish order.
            let blocker = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 1.5], queue: queue))
            try worker.waitForStart(of: blocker.id)
            let jobs = try producer.enqueue(priorities.map { JobRequest(type: "echo", input: .string($0.rawValue), priority: $0, queue: queue) })
            _ = try tap.waitForResults([blocker.id] + jobs.map(\.id))
            let order = tap.arrivedResults.filter { r in jobs.contains { $0.id == r.jobID } }.map { $0.output?.stringValue }
            #expect(order == ["veryHigh", "high", "normal", "low", "veryLow"])
        }
    }
}

extension JSONValue {
    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}
