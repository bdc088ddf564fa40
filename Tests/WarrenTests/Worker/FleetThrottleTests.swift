import Testing

@testable import Warren

@Suite("FleetThrottle")
struct FleetThrottleTests {
    @Test func aRefusedTurnIsAskedAgainAfterAboutTheRetryDelay() throws {
        var throttle = FleetThrottle(type: "api", limit: try RateLimit(parsing: "2/s"))
        throttle.wait(TestJobs.waiting("a"))
        let now = ContinuousClock.now
        let asked = throttle.jobsToAsk(at: now, room: 1)
        #expect(asked.count == 1)
        #expect(throttle.dueAt == nil)  // the window's one turn is asked for
        throttle.answered(asked[0], granted: false, at: now)
        let due = try #require(throttle.dueAt)
        #expect(due >= now + throttle.retryDelay / 2 && due <= now + throttle.retryDelay * 1.5)
    }

    @Test func aMissingWindowIsAskedOfOnlyOnceATurnsLifetimeHasPassed() throws {
        var throttle = FleetThrottle(type: "api", limit: try RateLimit(parsing: "2/s"))
        #expect(throttle.lifetime == .milliseconds(500))
        throttle.wait(TestJobs.waiting("a"))
        let now = ContinuousClock.now
        let asked = throttle.jobsToAsk(at: now, room: 1)
        throttle.declaredAt = now
        // The broker returns the turn, then confirms it: the retry delay does not shorten the wait.
        throttle.windowMissing(at: now)
        throttle.answered(asked[0], granted: false, at: now)
        #expect(throttle.declaredAt == nil)
        #expect(throttle.dueAt == now + .milliseconds(500))
        #expect(!throttle.isDue(at: now + .milliseconds(499)))
        #expect(throttle.jobsToAsk(at: now + .milliseconds(499), room: 1).isEmpty)
        #expect(throttle.jobsToAsk(at: now + .milliseconds(500), room: 1).count == 1)
    }
}
