import AMQP
import Foundation
import Testing

@testable import Warren

@Suite("JobIntake")
struct JobIntakeTests {
    private let registry: OperationRegistry = {
        var registry = OperationRegistry()
        registry.register("echo", blocking: { (input: JSONValue, _) in input })
        return registry
    }()

    private func intake(maxCrashes: Int = 3) -> JobIntake {
        JobIntake(
            configuration: WorkerParts.configuration { $0.maxCrashes = maxCrashes }, registry: registry,
            logger: WorkerParts.logger)
    }

    private func verdict(
        _ descriptor: OperationDescriptor, _ intake: JobIntake? = nil, delivery: Delivery = WorkerParts.delivery(),
        deaths: [CrashTally.Death] = [], isHeld: Bool = false
    ) -> JobIntake.Verdict {
        (intake ?? self.intake()).verdict(
            on: descriptor, delivery: delivery, receivedAt: Date(), deaths: deaths, isHeld: isHeld)
    }

    @Test func aJobOfAKnownTypeRunsAndAnUnknownTypeIsRefusedNamingWhatRuns() {
        guard case .run(let registered) = verdict(TestJobs.descriptor(type: "echo")) else {
            return unexpected("not run")
        }
        #expect(registered.localQueue == OperationRegistry.defaultLocalQueue)
        guard case .refuse(let error, true, true) = verdict(TestJobs.descriptor(type: "nope")) else {
            return unexpected("not refused")
        }
        #expect(error.code == "unknownType")
        #expect(error.message == "unknown operation type 'nope'; this worker runs: echo")
    }

    @Test func aJobHeldAlreadyIsRefusedWithoutAResultAndKeepsItsLock() {
        guard case .refuse(let error, false, false) = verdict(TestJobs.descriptor(type: "echo"), isHeld: true) else {
            return unexpected("not refused")
        }
        #expect(error.code == "duplicateID")
    }

    @Test func aJobNotDueYetIsPostponedToTheLaterOfItsNotBeforeAndItsRetryHeader() {
        var descriptor = TestJobs.descriptor(type: "echo")
        descriptor.notBefore = Date(timeIntervalSinceNow: 60)
        guard case .postpone(let until) = verdict(descriptor) else { return unexpected("not postponed") }
        #expect(until == descriptor.notBefore)
        let later = Int64((Date().timeIntervalSince1970 + 120) * 1000)
        let delivery = WorkerParts.delivery(
            properties: MessageProperties(headers: [Topology.notBeforeHeader: .int(later)]))
        guard case .postpone(let header) = verdict(descriptor, delivery: delivery) else {
            return unexpected("not postponed")
        }
        #expect(Int64(header.timeIntervalSince1970 * 1000) == later)
    }

    @Test func aJobThatKilledMaxCrashesWorkersOnceAloneIsRefused() {
        let descriptor = TestJobs.descriptor(type: "echo")
        let shared = CrashTally.Death(journal: "a", worker: "w1", alone: false, reportedAt: Date())
        let alone = CrashTally.Death(journal: "b", worker: "w2", alone: true, reportedAt: Date())
        guard case .run = verdict(descriptor, intake(maxCrashes: 2), deaths: [shared, shared]) else {
            return unexpected("deaths it only shared condemned it")
        }
        guard case .refuse(let error, true, true) = verdict(descriptor, intake(maxCrashes: 2), deaths: [shared, alone])
        else { return unexpected("not refused") }
        #expect(error.code == "crashedWorker")
        #expect(error.message.contains("(w1, w2)") && error.message.hasSuffix("(at most 2)"))
    }

    @Test func cancellationsRecordedCoverTheJobsTheyName() {
        let intake = intake()
        let descriptor = TestJobs.descriptor(type: "echo", sequence: 5, key: "k")
        #expect(intake.cancellation(of: descriptor, queue: "q") == nil)
        intake.record(.cancel(jobIDs: [descriptor.id]))
        #expect(intake.cancellation(of: descriptor, queue: "q") != nil)
        #expect(intake.cancellation(of: TestJobs.descriptor(type: "echo"), queue: "q") == nil)
    }

    @Test func aRefusedMessageAnswersTheIdItsBodyOrPropertiesGive() {
        let intake = intake()
        let body = Array(#"{"version":1,"id":"job-1","type":"echo","key":"k","sequence":9,"unique":true,"#.utf8)
        let error = JobError(code: "malformedMessage", message: "bad")
        let (result, lock) = intake.refusal(of: WorkerParts.delivery(body: body), error: error, receivedAt: Date())
        #expect(result?.jobID == "job-1" && result?.status == .failed && result?.sequence == 9)
        #expect(result?.error == error && result?.type == "echo")
        #expect(lock?.key == "k" && lock?.jobID == "job-1")
        let named = WorkerParts.delivery(body: Array("{".utf8), properties: MessageProperties(messageID: "m-2"))
        #expect(intake.refusal(of: named, error: error, receivedAt: Date()).result?.jobID == "m-2")
        #expect(
            intake.refusal(of: WorkerParts.delivery(body: Array("{".utf8)), error: error, receivedAt: Date()).result
                == nil)
        #expect(intake.refusal(of: named, error: error, receivedAt: Date(), reply: false).result == nil)
    }
}
