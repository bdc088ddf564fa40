import AMQP
import Foundation
import Testing

@testable import Warren

/// Records what the settlements could not settle.
private final class RefusalLog: SettlementsDelegate {
    var refusals: [Settlements.Refusal] = []
    func refused(_ refusal: Settlements.Refusal) throws { refusals.append(refusal) }
}

/// Settling without a broker: the confirms are handed in as the broker would send them, to settlements that wait
/// for as many publishes as a test says.
@Suite("Settlements")
struct SettlementsTests {
    private func settlements() throws -> (Settlements, RefusalLog) {
        let settlements = Settlements(
            link: try WorkerParts.link(), logger: WorkerParts.logger, metrics: WorkerMetrics(operationTypes: []))
        let log = RefusalLog()
        settlements.delegate = log
        return (settlements, log)
    }

    @Test func aSettlementWithoutPublishesIsAppliedAtOnce() throws {
        let (settlements, log) = try settlements()
        settlements.received(7)
        let settlement = settlements.settlement(of: 7)
        #expect(!settlements.isAwaitingBroker)
        try settlements.settle(settlement)
        #expect(settlements.isAwaitingBroker && log.refusals.isEmpty)  // its ack waits to go out
        // The ack is due now: sending it reaches for the broker.
        #expect(throws: AMQPError.self) { try settlements.sendAcks() }
    }

    @Test func aSettlementWhosePublishFailedWithTheConnectionIsNotApplied() throws {
        let (settlements, _) = try settlements()
        let settlement = settlements.settlement(of: 3)
        let result = JobResult(
            jobID: "j", type: "test", sequence: 1, key: nil, status: .succeeded, workerID: "w", timings: JobTimings())
        #expect(throws: AMQPError.self) { try settlements.publish(result, replyTo: nil, settling: settlement) }
        settlements.connectionLost()
        #expect(!settlements.isAwaitingBroker)
    }

    @Test func resultsKeptForRedeliveryAreTakenOnce() throws {
        let (settlements, _) = try settlements()
        let result = JobResult(
            jobID: "j", type: "test", sequence: 1, key: nil, status: .succeeded, workerID: "w", timings: JobTimings())
        #expect(!settlements.keepsResults)
        settlements.keepForRedelivery(result)
        #expect(settlements.keepsResults)
        #expect(settlements.takeKeptResult(of: "j") == result)
        #expect(settlements.takeKeptResult(of: "j") == nil && !settlements.keepsResults)
    }

    @Test func theWindowSetsHowManyAcksWaitToGoTogether() throws {
        let (settlements, _) = try settlements()
        settlements.windowChanged(to: 40)
        settlements.received(1)
        settlements.acknowledge(1)
        let due = try #require(settlements.nextWake)
        #expect(due > .now - .seconds(1))  // held for up to 2 ms, not ten at once
        settlements.windowChanged(to: 1)
        #expect(try #require(settlements.nextWake) <= .now)
    }
}
