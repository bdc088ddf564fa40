import Foundation
import Testing

@testable import Warren

@Suite("Fleet-wide rate limits")
struct FleetRateLimitTests {
    @Test(arguments: [
        ("10/s", 1, 100), ("5/s", 1, 200), ("100/m", 1, 600), ("1/h", 1, 3_600_000), ("3/s", 1, 334),
        ("11/s", 1, 91), ("15/s", 1, 67), ("20/s", 1, 50), ("21/s", 2, 100), ("40/s", 4, 100), ("1000/s", 100, 100),
        ("999/s", 99, 100), ("30/s", 3, 100), ("6000/m", 10, 100),
    ])
    func windowsSpaceTurnsUpToTwentyASecondAndGroupThemAbove(_ rate: String, _ turns: Int, _ milliseconds: Int) throws {
        let window = FleetRateLimit.window(of: try RateLimit(parsing: rate))
        #expect(window.turns == turns && window.milliseconds == milliseconds, "\(rate): \(window)")
    }

    /// At most `turns` start in any `milliseconds`, so a period holds at most turns × ⌈period ÷ milliseconds⌉: never
    /// more than the limit (11/s once made 2 turns of 182 ms, 12 in some seconds), and at least 95 % of it.
    @Test func noPeriodHoldsMoreThanTheLimit() throws {
        for unit in ["s", "m"] {
            for count in 1...1000 {
                let limit = try RateLimit(parsing: "\(count)/\(unit)")
                let window = FleetRateLimit.window(of: limit)
                let period = Int(limit.period / .milliseconds(1))
                let most = window.turns * ((period + window.milliseconds - 1) / window.milliseconds)
                #expect(most <= count, "\(count)/\(unit): \(window) lets \(most) start in a period")
                #expect(most * 20 >= count * 19, "\(count)/\(unit): \(window) keeps only \(most)")
            }
        }
    }

    @Test func theQueueNamesTheWindowAndLimitsWithTheSameSpacingShareIt() throws {
        #expect(
            FleetRateLimit.queue(forType: "call-api", limit: try RateLimit(parsing: "10/s"))
                == "warren.rate.call-api.1per100ms")
        #expect(
            FleetRateLimit.queue(forType: "t", limit: try RateLimit(parsing: "600/m"))
                == FleetRateLimit.queue(forType: "t", limit: try RateLimit(parsing: "10/s")))
        let arguments = FleetRateLimit.arguments(for: try RateLimit(parsing: "40/s"))
        #expect(arguments["x-max-length"] == .int(4) && arguments["x-message-ttl"] == .int(100))
        #expect(arguments["x-overflow"] == .string("reject-publish") && arguments["x-expires"] == .int(86_400_100))
        let long = String(repeating: "t", count: 240)
        #expect(FleetRateLimit.problem(withType: long, limit: try RateLimit(parsing: "10/s")) != nil)
        #expect(
            FleetRateLimit.problem(withType: String(long.prefix(200)), limit: try RateLimit(parsing: "10/s")) == nil)
    }

    @Test func refusedTurnsPutTheirJobsBackInOrderAndWaitBeforeAskingAgain() throws {
        var throttle = FleetThrottle(type: "api", limit: try RateLimit(parsing: "40/s"))
        let now = ContinuousClock.now
        let jobs = (1...6).map { TestJobs.waiting("j\($0)") }
        for job in jobs { throttle.wait(job) }
        #expect(throttle.jobsToAsk(at: now, room: 0).isEmpty, "no thread free")
        let asked = throttle.jobsToAsk(at: now, room: 10)
        #expect(asked.map(\.descriptor.id) == ["j1", "j2", "j3", "j4"], "as many as the window holds")
        #expect(throttle.dueAt == nil && !throttle.isDue(at: now), "every turn is asked for")
        throttle.answered(asked[0], granted: true, at: now)
        // Refusals are taken in last first, as the worker does.
        for job in asked.dropFirst().reversed() { throttle.answered(job, granted: false, at: now) }
        #expect(throttle.asking == 0)
        // After half to one and a half of the retry delay, at random.
        let later = now + throttle.retryDelay * 1.5
        #expect(!throttle.isDue(at: now + throttle.retryDelay / 2 - .nanoseconds(1)) && throttle.isDue(at: later))
        #expect(throttle.retryDelay == .milliseconds(10))
        let probe = throttle.jobsToAsk(at: later, room: 10)
        #expect(probe.map(\.descriptor.id) == ["j2"], "a full window is probed with one turn")
        throttle.answered(probe[0], granted: true, at: later)
        let again = throttle.jobsToAsk(at: later, room: 10)
        #expect(again.map(\.descriptor.id) == ["j3", "j4", "j5", "j6"])
    }

    @Test func cancelledJobsAskForNoTurnAndLostQuestionsAreAskedAgainFirst() throws {
        var throttle = FleetThrottle(type: "api", limit: try RateLimit(parsing: "1/s"))
        let now = ContinuousClock.now
        let jobs = [TestJobs.waiting("low", .low), TestJobs.waiting("gone"), TestJobs.waiting("high", .high)]
        for job in jobs { throttle.wait(job) }
        jobs[1].operation.cancel(.requested)
        #expect(throttle.jobsToAsk(at: now, room: 5).map(\.descriptor.id) == ["high"])
        throttle.unanswered([jobs[2]])
        #expect(throttle.asking == 0 && throttle.declaredAt == nil)
        #expect(throttle.jobsToAsk(at: now, room: 5).map(\.descriptor.id) == ["high"])
        throttle.answered(jobs[2], granted: true, at: now)
        #expect(throttle.jobsToAsk(at: now, room: 5).map(\.descriptor.id) == ["low"])
    }
}
