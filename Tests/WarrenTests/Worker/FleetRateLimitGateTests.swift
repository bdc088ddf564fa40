import Foundation
import Testing

@testable import Warren

@Suite("FleetRateLimitGate")
struct FleetRateLimitGateTests {
    @Test func aJobOfALimitedTypeWaitsForATurnAndOthersPass() throws {
        let localQueues = LocalQueues(widths: ["default": 2])
        let gate = FleetRateLimitGate(
            limits: ["api": try RateLimit(parsing: "10/s")], link: try WorkerParts.link(), jobs: InFlightJobs(),
            localQueues: localQueues.byName, logger: WorkerParts.logger)
        guard case .hold = try gate.admit(TestJobs.waiting("a", type: "api")) else { return unexpected("not held") }
        guard case .pass = try gate.admit(TestJobs.waiting("b", type: "other")) else { return unexpected("not passed") }
        #expect(gate.nextWake != nil)  // a turn is due for the waiting job
        // No turn was asked: an answer for an unknown question releases nothing.
        gate.answered(upTo: 5, multiple: true, granted: true)
        #expect(gate.takeReleased().isEmpty)
        // Asking reaches for the broker.
        #expect(throws: (any Error).self) { try gate.askForTurns() }
    }
}
