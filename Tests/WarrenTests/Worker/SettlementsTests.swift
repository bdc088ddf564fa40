import AMQP
import Foundation
import Testing

@testable import Warren

/// Records what the settlements could not settle.
private final class RefusalLog: SettlementsDelegate {
    var refusals: [Settlements.Refusal] = []
    func refused(_ refusal: Settlements.Refusal) throws { refusals.append(refusal) }
}

/// Settling without a broker: the confirms are handed in as the broker would send them.
@Suite("Settlements")
struct SettlementsTests {
    private func settlements() throws -> (Settlements, RefusalLog) {
        let settlements = Settlements(
            link: try WorkerParts.link(), logger: WorkerParts.logger, metrics: WorkerMetrics(operationTypes: []))
        let log = RefusalLog()
        settlements.delegate = log
        return (settlements, log)
    }

    @Test func aDeliveryIsAcknowledgedOnceEveryPublishForItIsConfirmed() throws {
        let (settlements, log) = try settlements()
        settlements.received(7)
        try settlements.settle(7, action: .ack, after: [.publish(1), .publish(2)])
        #expect(settlements.isAwaitingBroker)
        try settlements.published(upTo: 1, multiple: false, ack: true)
        #expect(throws: Never.self) { try settlements.sendAcks() }  // nothing to acknowledge yet
        try settlements.published(upTo: 2, multiple: true, ack: true)
        #expect(log.refusals.isEmpty)
        // The ack is due now: sending it reaches for the broker.
        #expect(throws: AMQPError.self) { try settlements.sendAcks() }
    }

    @Test func refusedPublishesGoToTheDelegateByWhatTheyCarried() throws {
        let (settlements, log) = try settlements()
        let delivery = WorkerParts.delivery(tag: 3)
        let error = JobError(code: "x", message: "y")
        try settlements.settle(3, action: .ack, after: [.publish(1)], deadLettered: (delivery, error))
        try settlements.settle(4, action: .ack, after: [.publish(2)])
        try settlements.settle(5, action: .ack, after: [.reply(3)], delivery: delivery)
        try settlements.published(upTo: 3, multiple: true, ack: false)
        #expect(log.refusals.count == 3)
        guard case .deadLetter(let letter, error) = log.refusals[0] else { return unexpected("no dead letter") }
        #expect(letter.deliveryTag == 3)
        guard case .delayedCopy(4) = log.refusals[1] else { return unexpected("no delayed copy") }
        guard case .result(let settlement) = log.refusals[2] else { return unexpected("no result") }
        #expect(settlement.deliveryTag == 5)
    }

    @Test func resultsWhoseConfirmsTheConnectionTookAreKeptForTheRedelivery() throws {
        let (settlements, _) = try settlements()
        let result = JobResult(
            jobID: "j", type: "test", sequence: 1, key: nil, status: .succeeded, workerID: "w",
            timings: JobTimings())
        try settlements.settle(1, action: .ack, after: [.publish(1)], result: result)
        #expect(!settlements.keepsResults)
        settlements.connectionLost()
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
