import Foundation
import Testing

@testable import Warren

@Suite struct BrokerThreadHealthTests {
    @Test("a thread is live but not ready until it connected; ready while connected and not blocked")
    func connectionStates() throws {
        let health = BrokerThreadHealth()
        var report = health.report()
        #expect(report.connection == .connecting && report.broker == nil)
        #expect(report.isLive && !report.isReady)
        health.disconnected(WarrenError(.broker, "connection refused"))
        report = health.report()
        #expect(report.connection == .connecting && report.lastError == "connection refused", "not connected yet")

        health.connected(to: "amqp://guest:***@localhost:5672/%2F")
        report = health.report()
        #expect(report.connection == .connected && report.broker == "amqp://guest:***@localhost:5672/%2F")
        #expect(report.isLive && report.isReady && report.lastError == nil)
        let connectedSince = report.since

        health.blocked("low on memory")
        report = health.report()
        #expect(report.blockedReason == "low on memory")
        #expect(report.isLive && !report.isReady)
        #expect(report.since == connectedSince, "being blocked does not change the connection's state")
        health.blocked(nil)
        #expect(health.report().isReady)

        health.blocked("low on memory")
        health.disconnected(WarrenError(.broker, "connection reset"))
        report = health.report()
        #expect(report.connection == .reconnecting && report.lastError == "connection reset")
        #expect(report.blockedReason == nil, "a new connection is not blocked until the broker says so")
        #expect(report.isLive && !report.isReady)
        #expect(report.since >= connectedSince)

        health.connected(to: "amqp://guest:***@other:5672/%2F")
        report = health.report()
        #expect(report.isReady && report.lastError == nil && report.broker == "amqp://guest:***@other:5672/%2F")
    }

    @Test("a stopping thread stays stopping, whatever its connection does, until it stopped")
    func stopping() {
        let health = BrokerThreadHealth()
        health.connected(to: "amqp://localhost")
        health.stopping()
        let since = health.report().since
        health.disconnected(WarrenError(.broker, "gone"))
        health.connected(to: "amqp://localhost")
        var report = health.report()
        #expect(report.connection == .stopping && report.since == since)
        #expect(!report.isReady && report.isLive)
        health.stopped()
        report = health.report()
        #expect(report.connection == .stopped && !report.isReady)
    }

    @Test("a thread is on time while it turns or sleeps as long as it said, and stalled a minute past that")
    func overdue() {
        let health = BrokerThreadHealth()
        health.sleeping(for: .seconds(3600))
        #expect(health.report().overdue == nil)
        health.turning()
        let turning = health.report()
        #expect(turning.overdue.map { $0 < .seconds(1) } ?? true)
        #expect(turning.isLive)

        var stalled = turning
        stalled.connection = .connected
        stalled.overdue = BrokerThreadHealth.stallLimit
        #expect(!stalled.isLive)
        for waiting in [HealthReport.Connection.connecting, .reconnecting, .stopped] {
            var report = stalled
            report.connection = waiting
            #expect(report.isLive, "a thread \(waiting) waits for a broker, or is done: not stuck")
        }
        stalled.connection = .stopping
        #expect(!stalled.isLive)
        stalled.overdue = BrokerThreadHealth.stallLimit - .milliseconds(1)
        #expect(stalled.isLive)
        stalled.overdue = .seconds(600)
        stalled.blockedReason = "low on disk"
        #expect(stalled.isLive, "a thread waiting on a broker that blocks it is not stuck")
    }
}
