import Foundation
import Testing

@testable import Warren

@Suite("CronExpression")
struct CronExpressionTests {
    private static let newYork = TimeZone(identifier: "America/New_York")

    /// The first `count` matches of `expression` after `start`, in UTC ISO 8601 (`2026-01-01T00:00:00Z`).
    private func ticks(
        _ expression: String, after start: String, count: Int = 1, in zone: TimeZone = .gmt
    ) throws -> [String] {
        let cron = try CronExpression(expression)
        var date = try Date(start, strategy: .iso8601)
        var found: [String] = []
        for _ in 0..<count {
            date = try #require(cron.next(after: date, in: zone), "\(expression) has no tick after \(date)")
            found.append(date.formatted(.iso8601))
        }
        return found
    }

    private func message(_ expression: String) -> String? {
        let error = #expect(throws: WarrenError.self, "\(expression)") { try CronExpression(expression) }
        #expect(error?.code == .invalidSchedule)
        return error?.message
    }

    @Test func everyMinuteIsStrictlyAfterTheStartWhateverItsSeconds() throws {
        #expect(
            try ticks("* * * * *", after: "2026-05-04T10:00:00Z", count: 2) == [
                "2026-05-04T10:01:00Z", "2026-05-04T10:02:00Z",
            ])
        #expect(try ticks("* * * * *", after: "2026-05-04T10:00:30Z") == ["2026-05-04T10:01:00Z"])
        let justBefore = try Date("2026-05-04T10:00:00Z", strategy: .iso8601).addingTimeInterval(-0.001)
        #expect(
            try CronExpression("* * * * *").next(after: justBefore, in: .gmt)?.formatted(.iso8601)
                == "2026-05-04T10:00:00Z")
    }

    @Test func aRareDateOnAWeekdayIsFoundDecadesApart() throws {
        // 29 February on a Sunday (a day field starting with `*` makes both count): 2032, 2060, 2088, then 2128,
        // across 2100, which is no leap year.
        #expect(
            try ticks("0 0 29 2 */7", after: "2026-11-25T00:00:00Z", count: 4)
                == ["2032-02-29T00:00:00Z", "2060-02-29T00:00:00Z", "2088-02-29T00:00:00Z", "2128-02-29T00:00:00Z"])
    }

    @Test func stepsRangesAndLists() throws {
        #expect(
            try ticks("*/15 * * * *", after: "2026-05-04T10:07:00Z", count: 4)
                == ["2026-05-04T10:15:00Z", "2026-05-04T10:30:00Z", "2026-05-04T10:45:00Z", "2026-05-04T11:00:00Z"])
        #expect(
            try ticks("10-30/10 9-17/4 * * *", after: "2026-05-04T09:15:00Z", count: 5)
                == [
                    "2026-05-04T09:20:00Z", "2026-05-04T09:30:00Z", "2026-05-04T13:10:00Z", "2026-05-04T13:20:00Z",
                    "2026-05-04T13:30:00Z",
                ])
        #expect(
            try ticks("50/5 * * * *", after: "2026-05-04T10:00:00Z", count: 3)
                == ["2026-05-04T10:50:00Z", "2026-05-04T10:55:00Z", "2026-05-04T11:50:00Z"])
        #expect(
            try ticks("5,40-41 6,18 * * *", after: "2026-05-04T07:00:00Z", count: 4)
                == ["2026-05-04T18:05:00Z", "2026-05-04T18:40:00Z", "2026-05-04T18:41:00Z", "2026-05-05T06:05:00Z"])
    }

    @Test func monthAndWeekdayNamesInAnyCase() throws {
        // 2026-01-01 is a Thursday; January 30 a Friday, July 1 a Wednesday.
        let cron = "0 9 * jan,JUL Mon-FRI"
        #expect(
            try ticks(cron, after: "2026-01-01T10:00:00Z", count: 2) == [
                "2026-01-02T09:00:00Z", "2026-01-05T09:00:00Z",
            ])
        #expect(try ticks(cron, after: "2026-01-30T10:00:00Z") == ["2026-07-01T09:00:00Z"])
    }

    @Test func macrosAreTheirExpansions() throws {
        let start = "2026-01-01T10:00:00Z"  // a Thursday
        #expect(try ticks("@yearly", after: start) == ["2027-01-01T00:00:00Z"])
        #expect(try ticks("@annually", after: start) == ["2027-01-01T00:00:00Z"])
        #expect(try ticks("@monthly", after: start) == ["2026-02-01T00:00:00Z"])
        #expect(try ticks("@weekly", after: start) == ["2026-01-04T00:00:00Z"])
        #expect(try ticks("@daily", after: start) == ["2026-01-02T00:00:00Z"])
        #expect(try ticks("@MIDNIGHT", after: start) == ["2026-01-02T00:00:00Z"])
        #expect(try ticks("@hourly", after: start, count: 2) == ["2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"])
    }

    @Test func bothDayFieldsRestrictedMatchEitherDay() throws {
        // Fridays and the 13th: Friday 2, Friday 9, Tuesday 13, Friday 16.
        #expect(
            try ticks("0 0 13 * fri", after: "2026-01-01T00:00:00Z", count: 4)
                == ["2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z", "2026-01-16T00:00:00Z"])
        #expect(try ticks("0 0 1-31 * fri", after: "2026-01-01T00:00:00Z") == ["2026-01-02T00:00:00Z"])
    }

    @Test func aDayFieldBeginningWithAStarMakesBothMatch() throws {
        #expect(
            try ticks("0 0 13 * *", after: "2026-01-01T00:00:00Z", count: 2) == [
                "2026-01-13T00:00:00Z", "2026-02-13T00:00:00Z",
            ])
        #expect(try ticks("0 0 * * fri", after: "2026-01-03T00:00:00Z") == ["2026-01-09T00:00:00Z"])
        // Odd days that are Fridays: */2 counts as unrestricted, so it does not widen the match.
        #expect(
            try ticks("0 0 */2 * fri", after: "2026-01-01T00:00:00Z", count: 3)
                == ["2026-01-09T00:00:00Z", "2026-01-23T00:00:00Z", "2026-02-13T00:00:00Z"])
    }

    @Test func sundayIsZeroOrSeven() throws {
        let sunday = ["2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"]
        for expression in ["0 0 * * 0", "0 0 * * 7", "0 0 * * SUN"] {
            #expect(try ticks(expression, after: "2026-01-01T00:00:00Z", count: 2) == sunday, "\(expression)")
        }
        #expect(
            try ticks("0 0 * * 5-7", after: "2026-01-01T00:00:00Z", count: 4)
                == ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-09T00:00:00Z"])
    }

    @Test func leapDaysComeEveryFourYears() throws {
        #expect(
            try ticks("0 0 29 2 *", after: "2025-01-01T00:00:00Z", count: 2) == [
                "2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z",
            ])
        #expect(try ticks("0 0 29 2 *", after: "2025-03-01T00:00:00Z") == ["2028-02-29T00:00:00Z"])
    }

    @Test func theThirtyFirstSkipsShortMonths() throws {
        #expect(
            try ticks("0 0 31 * *", after: "2026-01-31T00:00:00Z", count: 4)
                == ["2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"])
    }

    @Test func theYearRollsOver() throws {
        #expect(try ticks("59 23 31 12 *", after: "2026-12-31T23:59:00Z") == ["2027-12-31T23:59:00Z"])
        #expect(try ticks("* * * * *", after: "2026-12-31T23:59:30Z") == ["2027-01-01T00:00:00Z"])
        #expect(try ticks("0 0 1 1 *", after: "2026-06-01T00:00:00Z") == ["2027-01-01T00:00:00Z"])
    }

    @Test func readsTheWallClockOfTheZone() throws {
        let newYork = try #require(Self.newYork, "no America/New_York in /usr/share/zoneinfo")
        #expect(try ticks("0 9 * * *", after: "2026-01-15T00:00:00Z", in: newYork) == ["2026-01-15T14:00:00Z"])
        #expect(try ticks("0 9 * * *", after: "2026-07-15T00:00:00Z", in: newYork) == ["2026-07-15T13:00:00Z"])
        // 23:00 on December 31 in New York is already January 1 in UTC.
        #expect(try ticks("0 23 31 12 *", after: "2026-06-01T00:00:00Z", in: newYork) == ["2027-01-01T04:00:00Z"])
    }

    @Test func aTimeTheSpringTransitionSkipsDoesNotOccurThatDay() throws {
        let newYork = try #require(Self.newYork, "no America/New_York in /usr/share/zoneinfo")
        // 2026-03-08 02:00 EST becomes 03:00 EDT: there is no 02:30 that day.
        #expect(
            try ticks("30 2 * * *", after: "2026-03-07T12:00:00Z", count: 3, in: newYork)
                == ["2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z", "2026-03-11T06:30:00Z"])
        #expect(
            try ticks("*/30 * * * *", after: "2026-03-08T06:00:00Z", count: 3, in: newYork)
                == ["2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"])
    }

    @Test func aTimeTheAutumnTransitionRepeatsMatchesOnce() throws {
        let newYork = try #require(Self.newYork, "no America/New_York in /usr/share/zoneinfo")
        // 2026-11-01 02:00 EDT becomes 01:00 EST: 01:30 comes at 05:30Z and again at 06:30Z.
        #expect(
            try ticks("30 1 * * *", after: "2026-10-31T12:00:00Z", count: 2, in: newYork)
                == ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"])
        #expect(try ticks("30 1 * * *", after: "2026-11-01T06:00:00Z", in: newYork) == ["2026-11-02T06:30:00Z"])
        #expect(
            try ticks("*/30 * * * *", after: "2026-11-01T05:00:00Z", count: 3, in: newYork)
                == ["2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"])
    }

    @Test func describesItselfAsGivenAndTrimmed() throws {
        #expect(try CronExpression("  */5 * * * MON \n").description == "*/5 * * * MON")
        #expect(try CronExpression("@daily") == CronExpression(" @daily"))
        #expect(try CronExpression("0 0 * * *") != CronExpression("0 1 * * *"))
    }

    @Test func namesTheFieldAndTheValueOutOfRange() {
        #expect(message("0 25 * * *") == "cron field 2 (hour) of '0 25 * * *': 25 is out of range 0-23")
        #expect(message("60 * * * *") == "cron field 1 (minute) of '60 * * * *': 60 is out of range 0-59")
        #expect(message("0 0 0 * *") == "cron field 3 (day-of-month) of '0 0 0 * *': 0 is out of range 1-31")
        #expect(message("0 0 * 13 *") == "cron field 4 (month) of '0 0 * 13 *': 13 is out of range 1-12")
        #expect(message("0 0 * * 8") == "cron field 5 (day-of-week) of '0 0 * * 8': 8 is out of range 0-7")
    }

    @Test func saysHowManyFieldsItNeeds() {
        #expect(
            message("x y")
                == "cron expression 'x y' has 2 fields; it needs 5 (minute hour day-of-month month day-of-week) "
                + "or a macro (@yearly, @monthly, @weekly, @daily, @hourly)")
        #expect(message("* * * * * *")?.contains("has 6 fields; it needs 5") == true)
        #expect(message("  ")?.hasPrefix("cron expression is empty; it needs 5 (minute hour") == true)
    }

    @Test func refusesBadStepsRangesNamesAndMacros() {
        #expect(
            message("*/0 * * * *")
                == "cron field 1 (minute) of '*/0 * * * *': step '0' in '*/0' must be a whole number of at least 1")
        #expect(message("0 0 * * */x")?.contains("step 'x' in '*/x' must be a whole number") == true)
        #expect(message("1/2/3 * * * *")?.contains("'1/2/3' has more than one step") == true)
        #expect(
            message("0 22-2 * * *")
                == "cron field 2 (hour) of '0 22-2 * * *': range '22-2' is reversed (22 > 2); "
                + "ranges do not wrap around, write 22-23,0-2")
        #expect(
            message("0 0 * * fri-sun")?.hasSuffix(
                "range 'fri-sun' is reversed (5 > 0); ranges do not wrap around, write 5-7") == true)
        #expect(
            message("0 0 * foo *") == "cron field 4 (month) of '0 0 * foo *': 'foo' is not a number or a name (jan-dec)"
        )
        #expect(message("0 0 * * mon-xyz")?.hasSuffix("'xyz' is not a number or a name (sun-sat)") == true)
        #expect(message("jan * * * *")?.hasSuffix("'jan' is not a number") == true)
        #expect(message("1,,2 * * * *")?.hasSuffix("'1,,2' has an empty list item") == true)
        #expect(message("-5 * * * *")?.hasSuffix("'-5' is missing a value") == true)
        #expect(
            message("@fortnightly")
                == "unknown cron macro '@fortnightly'; use one of @yearly, @monthly, @weekly, @daily, @hourly")
    }

    @Test func refusesWhatNeverMatches() throws {
        for expression in ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30-31 feb *"] {
            #expect(
                message(expression)
                    == "cron expression '\(expression)' never matches: none of its months has any of its days")
        }
        // A weekday can stand in for the missing day, and February has a 29th once every four years.
        #expect(try ticks("0 0 30-31 feb mon", after: "2026-01-01T00:00:00Z") == ["2026-02-02T00:00:00Z"])
        _ = try CronExpression("0 0 29 2 *")
    }
}
