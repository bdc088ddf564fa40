import Foundation
import Testing

@testable import Warren

/// A gate that answers what the test tells it, and releases what the test hands it.
private final class ScriptedGate: AdmissionGate {
    var verdict: AdmissionVerdict
    var released: [(InFlightJob, AdmissionVerdict)] = []
    private(set) var admitted: [String] = []

    init(_ verdict: AdmissionVerdict) {
        self.verdict = verdict
    }

    func admit(_ job: InFlightJob) throws -> AdmissionVerdict {
        admitted.append(job.descriptor.id)
        return verdict
    }

    func takeReleased() -> [(InFlightJob, AdmissionVerdict)] {
        defer { released = [] }
        return released
    }
}

@Suite("Admission and its gate chain")
struct AdmissionTests {
    @Test func aJobGoesThroughEveryGateThatPassesItToItsLocalQueue() throws {
        let (first, second) = (ScriptedGate(.pass), ScriptedGate(.pass))
        let admission = GateChain(gates: [first, second])
        guard case .queue = try admission.admit(WorkerParts.job("a")) else { return unexpected("not queued") }
        #expect(first.admitted == ["a"] && second.admitted == ["a"])
    }

    @Test func theFirstGateThatDoesNotPassHasTheLastWord() throws {
        let (first, second) = (ScriptedGate(.hold), ScriptedGate(.pass))
        let admission = GateChain(gates: [first, second])
        guard case .held = try admission.admit(WorkerParts.job("a")) else { return unexpected("not held") }
        #expect(second.admitted.isEmpty)
        first.verdict = .reject(JobError(code: "dependencyCycle", message: "a -> a"))
        guard case .reject(let error) = try admission.admit(WorkerParts.job("b")) else {
            return unexpected("not rejected")
        }
        #expect(error.code == "dependencyCycle")
        first.verdict = .sendRound
        guard case .sendRound = try admission.admit(WorkerParts.job("c")) else { return unexpected("not sent round") }
    }

    @Test func aReleasedJobGoesOnFromTheGateAfterTheOneThatHeldIt() throws {
        let (first, second, third) = (ScriptedGate(.pass), ScriptedGate(.pass), ScriptedGate(.pass))
        let admission = GateChain(gates: [first, second, third])
        let job = WorkerParts.job("a")
        second.released = [(job, .pass)]
        let released = try admission.takeReleased()
        #expect(released.count == 1 && released[0].0 === job)
        guard case .queue = released[0].1 else { return unexpected("not queued") }
        #expect(first.admitted.isEmpty && second.admitted.isEmpty && third.admitted == ["a"])
    }

    @Test func aReleasedJobThatALaterGateHoldsIsNotListed() throws {
        let (first, second) = (ScriptedGate(.pass), ScriptedGate(.hold))
        let admission = GateChain(gates: [first, second])
        first.released = [
            (WorkerParts.job("a"), .pass), (WorkerParts.job("b"), .reject(JobError(code: "x", message: "y"))),
        ]
        let released = try admission.takeReleased()
        #expect(released.map(\.0.descriptor.id) == ["b"])
        #expect(second.admitted == ["a"])
    }

    @Test func onlyTheGatesTheConfigurationAsksForAreMade() throws {
        let jobs = InFlightJobs()
        let localQueues = LocalQueues(widths: ["default": 2])
        let lifecycle = Lifecycle(configuration: WorkerParts.configuration())
        let crashes = CrashWatch(
            configuration: WorkerParts.configuration(), broker: "b", logger: WorkerParts.logger,
            metrics: WorkerMetrics(operationTypes: []))
        let plain = Admission(
            configuration: WorkerParts.configuration(), jobs: jobs, link: try WorkerParts.link(),
            localQueues: localQueues, crashes: crashes, lifecycle: lifecycle,
            metrics: WorkerMetrics(operationTypes: []), logger: WorkerParts.logger)
        #expect(plain.rateLimits == nil && plain.fleetRateLimits == nil && plain.nextWake == nil)
        let limited = Admission(
            configuration: WorkerParts.configuration { $0.rateLimits = ["echo": try! RateLimit(parsing: "2/s")] },
            jobs: jobs,
            link: try WorkerParts.link(), localQueues: localQueues, crashes: crashes, lifecycle: lifecycle,
            metrics: WorkerMetrics(operationTypes: []), logger: WorkerParts.logger)
        #expect(limited.rateLimits != nil && limited.fleetRateLimits == nil)
    }
}
