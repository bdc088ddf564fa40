import Foundation
import Synchronization
import Testing

@testable import Warren

/// Collects the reports `JobOperation`s send, from whichever thread sends them.
///
/// Thread safety: locked; `record` is called from queue threads and tasks, the rest from the test.
final class ReportCollector: Sendable {
    private let reports = Mutex<[FinishedJob]>([])

    /// The closure to hand to `JobOperation(job:input:body:report:)`.
    var report: @Sendable (FinishedJob) -> Void {
        { [self] finished in reports.withLock { $0.append(finished) } }
    }

    var all: [FinishedJob] {
        reports.withLock { $0 }
    }

    func reports(for jobID: String) -> [FinishedJob] {
        all.filter { $0.jobID == jobID }
    }

    /// Waits until at least `count` reports arrived, or fails the test after `timeout`.
    /// - Returns: The reports received so far.
    @discardableResult
    func waitForReports(
        _ count: Int, timeout: Duration = .seconds(10), sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [FinishedJob] {
        try await waitUntil("\(count) reports", timeout: timeout, sourceLocation: sourceLocation) {
            all.count >= count
        }
        return all
    }

    /// Waits for the single report of `jobID`.
    func waitForReport(
        of jobID: String, timeout: Duration = .seconds(10), sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> FinishedJob {
        try await waitUntil("a report of \(jobID)", timeout: timeout, sourceLocation: sourceLocation) {
            !reports(for: jobID).isEmpty
        }
        return try #require(reports(for: jobID).first, sourceLocation: sourceLocation)
    }
}

/// Polls `condition` until it holds; records an issue and throws when `timeout` passes first.
///
/// The deadline is generous on purpose: it bounds a hang, it does not measure speed.
func waitUntil(
    _ what: String, timeout: Duration = .seconds(10), sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out after \(timeout) waiting for \(what)", sourceLocation: sourceLocation)
            throw WaitTimeout()
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}

struct WaitTimeout: Error {}

/// Lets a blocking test operation wait for the test to say "go", without a fixed sleep.
///
/// Thread safety: locked.
final class Gate: Sendable {
    private let isOpen = Mutex(false)

    func open() {
        isOpen.withLock { $0 = true }
    }

    /// Blocks the calling (queue) thread until ``open()``, or until `timeout` passes; returns whether it opened.
    /// The timeout only keeps a broken test from holding a queue thread for ever: it is long, because the test that
    /// opens the gate may itself wait that long for a thread when the integration tests in the same process keep
    /// the cooperative pool busy (a gate that gave up after 10 s once let a job finish before its cancellation).
    @discardableResult
    func wait(timeout: Duration = .seconds(120)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if isOpen.withLock({ $0 }) { return true }
            Thread.sleep(forTimeInterval: 0.001)
        }
        return false
    }
}
