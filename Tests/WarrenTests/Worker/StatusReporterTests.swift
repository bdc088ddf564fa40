import Foundation
import Testing

@testable import Warren

@Suite("StatusReporter")
struct StatusReporterTests {
    @Test func aStatusListsTheLocalQueuesAndTheJobsHeldExecutingFirst() throws {
        let configuration = WorkerParts.configuration { $0.workerID = "me" }
        let link = try WorkerParts.link()
        let jobs = InFlightJobs()
        let lifecycle = Lifecycle(configuration: configuration)
        let localQueues = LocalQueues(widths: ["default": 2])
        let consumers = ConsumerControl(
            link: link, lifecycle: lifecycle, configuration: configuration, logger: WorkerParts.logger
        ) { _ in }
        let dependencies = DependencyGate(jobs: jobs, link: link, maxParkedJobs: 10, logger: WorkerParts.logger)
        let reporter = StatusReporter(
            link: link, jobs: jobs,
            sources: .init(
                localQueues: localQueues, consumers: consumers, lifecycle: lifecycle,
                held: HeldDeliveries(logger: WorkerParts.logger), dependencies: dependencies),
            configuration: configuration, registry: OperationRegistry(), metrics: WorkerMetrics(operationTypes: []))
        let waiting = WorkerParts.job(TestJobs.descriptor(id: "low", priority: .low))
        waiting.isQueued = true
        let urgent = WorkerParts.job(TestJobs.descriptor(id: "high", priority: .veryHigh))
        jobs.insert(waiting)
        jobs.insert(urgent)
        reporter.count(
            JobResult(
                jobID: "x", type: nil, sequence: 1, key: nil, status: .succeeded, workerID: "me", timings: .init()))

        let status = reporter.status(listingJobs: 10)
        #expect(status.workerID == "me" && status.totals == ["succeeded": 1] && status.stopping == nil)
        #expect(status.localQueues.map(\.name) == ["default"] && status.localQueues[0].waiting == 2)
        #expect(status.jobs?.map(\.id) == ["high", "low"])
        #expect(status.jobs?.map(\.state) == [.waitingForTurn, .waiting])
        #expect(reporter.status(listingJobs: 1).moreJobs == 1)
        _ = lifecycle.beginStop()
        #expect(reporter.status().stopping == true && reporter.status().jobs == nil)
    }
}
