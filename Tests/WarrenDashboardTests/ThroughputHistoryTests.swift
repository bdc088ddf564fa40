import Foundation
import Testing
import Warren

@testable import WarrenDashboard

@Suite struct ThroughputHistoryTests {
    private func result(_ status: JobStatus, finished: Date, ran: Double = 1) -> JobResult {
        JobResult(
            jobID: UUID().uuidString, type: "sum", sequence: 1, key: nil, status: status, workerID: "w",
            timings: JobTimings(startedAt: finished - ran, finishedAt: finished))
    }

    @Test func ratesPerQueueAndForTheFleet() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        var history = ThroughputHistory()
        for second in 1...30 {
            history.record(result(.succeeded, finished: now - Double(second)), queue: "a", now: now)
        }
        for second in 1...6 { history.record(result(.failed, finished: now - Double(second)), queue: nil, now: now) }
        let fleet = history.rates(over: 60, now: now)
        #expect(fleet.succeeded == 0.5)
        #expect(fleet.failed == 0.1)
        #expect(fleet.started == 0.6)
        #expect(history.rates(over: 60, queue: "a", now: now).failed == 0)
        #expect(history.rates(over: 60, queue: "b", now: now) == .init())
    }

    @Test func forgetsWhatIsOlderThanItKeeps() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        var history = ThroughputHistory()
        history.record(result(.succeeded, finished: now - 10), queue: nil, now: now)
        let later = now + Double(ThroughputHistory.kept)
        history.trim(now: later)
        #expect(history.rates(over: ThroughputHistory.kept, now: later) == .init())
    }
}
