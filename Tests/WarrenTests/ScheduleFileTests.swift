import Foundation
import Testing

@testable import Warren

/// Schedule files, intervals, missed ticks, job ids and the state message, without a broker.
@Suite struct ScheduleFileTests {
    private static func parse(_ json: String) throws -> [Schedule] {
        try ScheduleFile.parse(Data(json.utf8))
    }

    private static func problem(_ json: String) -> String? {
        do {
            _ = try parse(json)
            return nil
        } catch let error as WarrenError {
            return error.code == .invalidSchedule ? error.message : "wrong code \(error.code)"
        } catch {
            return "not a WarrenError: \(error)"
        }
    }

    private static func date(_ text: String) throws -> Date {
        try Date.ISO8601FormatStyle().parse(text)
    }

    @Test func aTrailingCommaIsNotJSON() {
        let problem = Self.problem(#"{"schedules": [{"name": "n", "every": 60, "type": "echo", "input": 1,}]}"#)
        #expect(problem?.hasPrefix("not JSON: a comma before a closing bracket at byte") == true, "\(problem ?? "")")
    }

    @Test func readsEveryMember() throws {
        let schedules = try Self.parse(
            """
            {"schedules": [
              {"name": "nightly", "cron": "0 3 * * *", "timeZone": "Europe/Paris", "type": "report",
               "input": {"scope": "all"}, "priority": "high", "key": "report", "supersede": true, "queue": "reports",
               "maxAttempts": 5, "deadline": "1h", "timeLimit": "10m", "maxLateness": 600},
              {"name": "beat", "every": "30s", "type": "sleep"},
              {"name": "sync", "every": 60, "type": "sync", "key": "sync", "uniqueFor": "2h"}
            ]}
            """)
        #expect(schedules.count == 3)
        let nightly = schedules[0]
        #expect(nightly.recurrence == .cron(try CronExpression("0 3 * * *"), TimeZone(identifier: "Europe/Paris")!))
        #expect(nightly.input == ["scope": "all"])
        #expect(nightly.priority == .high)
        #expect(nightly.key == "report" && nightly.supersede && nightly.queue == "reports")
        #expect(nightly.maxAttempts == 5 && nightly.deadline == .seconds(3600) && nightly.maxLateness == .seconds(600))
        #expect(nightly.timeLimit == .seconds(600))
        #expect(nightly.request(for: Date(), now: Date()).timeLimit == .seconds(600))
        let beat = schedules[1]
        #expect(beat.recurrence == .every(.seconds(30)))
        #expect(
            beat.input == .null && beat.queue == Topology.defaultQueue && beat.key == nil && beat.maxLateness == nil)
        #expect(beat.timeLimit == nil && beat.uniqueFor == nil)
        #expect(schedules[2].uniqueFor == .seconds(7200))
        #expect(schedules[2].request(for: Date(), now: Date()).uniqueFor == .seconds(7200))
    }

    @Test func durationsAreNumbersOrStringsAsTheCommandLineTakesThem() throws {
        let json =
            #"{"schedules": [{"name": "a", "every": "90", "type": "t", "timeLimit": "250ms", "maxLateness": 60}]}"#
        let schedule = try #require(try Self.parse(json).first)
        #expect(schedule.recurrence == .every(.seconds(90)))
        #expect(schedule.timeLimit == .milliseconds(250))
        #expect(schedule.maxLateness == .seconds(60))
    }

    @Test func cronWithoutTimeZoneIsUTC() throws {
        let schedule = try #require(
            try Self.parse(#"{"schedules": [{"name": "a", "cron": "@hourly", "type": "t"}]}"#).first)
        #expect(schedule.recurrence == .cron(try CronExpression("@hourly"), TimeZone(identifier: "UTC")!))
    }

    @Test(
        "the tz database's names, links too, are time zones; Etc/GMT+5 is five hours behind UTC",
        arguments: [
            ("Etc/UTC", 0), ("Etc/GMT+5", -18_000), ("Etc/GMT-14", 50_400), ("US/Eastern", -14_400), ("Japan", 32_400),
            ("Zulu", 0),
        ])
    func timeZoneLinks(name: String, offsetInJune: Int) throws {
        let json = #"{"schedules": [{"name": "a", "cron": "@hourly", "type": "t", "timeZone": "\#(name)"}]}"#
        let schedule = try #require(try Self.parse(json).first)
        guard case .cron(_, let zone) = schedule.recurrence else { throw WarrenError(.invalidSchedule, "not cron") }
        #expect(zone.secondsFromGMT(for: Date(timeIntervalSince1970: 1_780_000_000)) == offsetInJune)
    }

    @Test(arguments: [
        (#"{"schedules": []}"#, "it lists no schedules"),
        (#"[1]"#, #"expected {"schedules""#),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5}], "schedule": []}"#,
            "unknown member 'schedule' at the top"
        ),
        (#"{"schedules": [{"name": "a", "type": "t"}]}"#, "schedules[0] ('a'): it has neither cron nor every"),
        (#"{"schedules": [{"name": "a", "type": "t", "cron": "@daily", "every": 5}]}"#, "both cron and every"),
        (#"{"schedules": [{"name": "a", "type": "t", "every": 5, "timeZone": "UTC"}]}"#, "timeZone goes with cron"),
        (
            #"{"schedules": [{"name": "a", "type": "t", "cron": "@daily", "timeZone": "Mars/Olympus"}]}"#,
            "time zone 'Mars/Olympus' is unknown"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "cron": "@daily", "timeZone": "GMT+5"}]}"#,
            "time zone 'GMT+5' is unknown"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "cron": "@daily", "timeZone": "PST"}]}"#,
            "time zone 'PST' is unknown"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "cron": "@daily", "timeZone": "../zoneinfo/UTC"}]}"#,
            "is unknown"
        ),
        (#"{"schedules": [{"name": "a", "type": "t", "cron": "@daily", "timeZone": "posix/UTC"}]}"#, "is unknown"),
        (#"{"schedules": [{"name": "a", "type": "t", "cron": "@daily", "timeZone": "Etc"}]}"#, "is unknown"),
        (
            #"{"schedules": [{"name": "a", "type": "t", "cron": "61 * * * *"}]}"#,
            "schedules[0] ('a'): cron field 1 (minute)"
        ),
        (#"{"schedules": [{"name": "a", "type": "t", "every": "0.5s"}]}"#, "whole number of seconds, at least 1"),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": "5 minutes"}]}"#,
            "every must be seconds, or a number with a unit"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": "0x10"}]}"#,
            "every must be seconds, or a number with a unit"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": "1e1"}]}"#,
            "every must be seconds, or a number with a unit"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": "+5s"}]}"#,
            "every must be seconds, or a number with a unit"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "deadline": 0}]}"#,
            "schedules[0] ('a'): deadline must be above 0"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "deadline": "0.0001"}]}"#,
            "deadline is kept to the millisecond, and 0.0001 s is less than half of one"
        ),
        (
            "{\"schedules\": [{\"name\": \"a\", \"type\": \"\(String(repeating: "t", count: 256))\", \"every\": 5}]}",
            "an operation type must be 1 to 255 bytes long"
        ),
        (#"{"schedules": [{"name": "a", "type": "t", "every": 5, "time_zone": "UTC"}]}"#, "unknown member 'time_zone'"),
        (#"{"schedules": [{"name": "a b", "type": "t", "every": 5}]}"#, "schedule name 'a b' must be 1 to 64 letters"),
        (#"{"schedules": [{"type": "t", "every": 5}]}"#, "schedules[0]: it has no name"),
        (#"{"schedules": [{"name": "a", "every": 5}]}"#, "schedules[0] ('a'): it has no type"),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "priority": "urgent"}]}"#,
            "priority 'urgent' is none of"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "priority": "x\n\u001b"}]}"#,
            #"priority 'x\u{A}\u{1B}' is none of"#
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "supersede": true}]}"#,
            "schedules[0] ('a'): supersede needs a key"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "queue": "warren.dead"}]}"#,
            "one of Warren's own queues"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "maxAttempts": 0}]}"#,
            "maxAttempts must be a whole number"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "maxLateness": "0.5s"}]}"#,
            "maxLateness must be at least 1 s"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "timeLimit": 0}]}"#,
            "timeLimit: a time limit must be from 1 ms to a year"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "timeLimit": "2y"}]}"#,
            "timeLimit must be seconds, or a number"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "uniqueFor": "1h"}]}"#,
            "uniqueFor: a unique job needs a key"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "key": "k", "uniqueFor": "8d"}]}"#,
            "uniqueFor: a unique job's lock lasts from 1 second to 7 days"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5, "key": "k", "supersede": true, "uniqueFor": 60}]}"#,
            "uniqueFor and supersede: give one or the other"
        ),
        (
            #"{"schedules": [{"name": "a", "type": "t", "every": 5}, {"name": "a", "type": "u", "every": 6}]}"#,
            "schedule name 'a' is given twice"
        ),
        ("not json", "not JSON"),
    ])
    func refusesMistakes(json: String, message: String) {
        let problem = Self.problem(json)
        #expect(problem?.contains(message) == true, "\(problem ?? "accepted")")
    }

    @Test func loadNamesTheFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("warren-\(UUID()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(#"{"schedules": [{"name": "a", "type": "t", "every": -1}]}"#.utf8).write(
            to: URL(fileURLWithPath: path))
        #expect(throws: WarrenError.self) { try ScheduleFile.load(path) }
        do {
            _ = try ScheduleFile.load(path)
        } catch let error as WarrenError {
            #expect(error.message.hasPrefix("the schedule file '\(path)': schedules[0] ('a'): every must be seconds"))
        }
        #expect(throws: WarrenError.self) { try ScheduleFile.load(path + ".missing") }
    }

    @Test func countsTheTicksBetweenTwoInstants() throws {
        let since = try Self.date("2026-11-24T10:00:00Z")
        let every = Recurrence.every(.seconds(2))
        #expect(every.count(after: since, before: try Self.date("2026-11-24T10:00:06Z"), limit: 100) == 2)
        #expect(every.count(after: since, before: try Self.date("2026-11-24T10:00:05Z"), limit: 100) == 2)
        #expect(every.count(after: since, before: try Self.date("2026-11-24T10:00:02Z"), limit: 100) == 0)
        #expect(every.count(after: since, before: try Self.date("2026-11-25T10:00:00Z"), limit: 100) == 100)
        let hourly = Recurrence.cron(try CronExpression("@hourly"), TimeZone(identifier: "UTC")!)
        #expect(hourly.count(after: since, before: try Self.date("2026-11-24T13:00:00Z"), limit: 100) == 2)
        #expect(hourly.count(after: since, before: try Self.date("2026-11-24T13:00:01Z"), limit: 100) == 3)
    }

    @Test func intervalsTickOnMultiplesSinceTheEpoch() throws {
        let every = Recurrence.every(.seconds(30))
        #expect(every.tick(after: try Self.date("2026-11-24T10:00:12Z")) == (try Self.date("2026-11-24T10:00:30Z")))
        #expect(every.tick(after: try Self.date("2026-11-24T10:00:30Z")) == (try Self.date("2026-11-24T10:01:00Z")))
    }

    @Test func theLatestMissedTickOnly() throws {
        let every = Recurrence.every(.seconds(60))
        let since = try Self.date("2026-11-24T10:00:00Z")
        #expect(every.latestTick(after: since, notAfter: try Self.date("2026-11-24T10:00:59Z")) == nil)
        #expect(
            every.latestTick(after: since, notAfter: try Self.date("2026-11-24T10:05:30Z"))
                == (try Self.date("2026-11-24T10:05:00Z")))
        let cron = Recurrence.cron(try CronExpression("*/15 * * * *"), TimeZone(identifier: "UTC")!)
        #expect(cron.latestTick(after: since, notAfter: try Self.date("2026-11-24T10:14:59Z")) == nil)
        #expect(
            cron.latestTick(after: since, notAfter: try Self.date("2026-11-24T10:15:00Z"))
                == (try Self.date("2026-11-24T10:15:00Z")))
        // A year of missed minutes: still the last one, found from the end.
        let minutely = Recurrence.cron(try CronExpression("* * * * *"), TimeZone(identifier: "UTC")!)
        #expect(
            minutely.latestTick(
                after: try Self.date("2025-11-24T10:00:00Z"), notAfter: try Self.date("2026-11-24T10:07:30Z"))
                == (try Self.date("2026-11-24T10:07:00Z")))
        // Sparse: the last tick is months back.
        let yearly = Recurrence.cron(try CronExpression("0 0 1 1 *"), TimeZone(identifier: "UTC")!)
        #expect(
            yearly.latestTick(
                after: try Self.date("2024-06-01T00:00:00Z"), notAfter: try Self.date("2026-11-24T00:00:00Z"))
                == (try Self.date("2026-01-01T00:00:00Z")))
    }

    @Test func jobIDsNameTheScheduleAndTheTickInUTC() throws {
        let tick = try Self.date("2026-03-08T07:05:09Z")
        #expect(Schedule.jobID(name: "nightly.report", tick: tick) == "nightly.report:20260308T070509Z")
        let schedule = Schedule(
            name: String(repeating: "n", count: Schedule.maxNameLength), recurrence: .every(.seconds(1)), type: "t",
            key: "k", supersede: true, deadline: .seconds(60))
        let request = schedule.request(for: tick, now: tick.addingTimeInterval(2))
        #expect(OperationDescriptor.problem(withID: request.id) == nil)
        #expect(request.deadline == tick.addingTimeInterval(62))
        #expect(request.key == "k" && request.supersede && request.notBefore == nil)
    }

    @Test func stateMessagesRoundTripAndMerge() throws {
        var older = ScheduleState()
        older.through = ["a": try Self.date("2026-11-24T10:00:00Z"), "b": try Self.date("2026-11-24T11:00:00Z")]
        var newer = ScheduleState()
        newer.through = ["a": try Self.date("2026-11-24T10:05:00Z"), "c": try Self.date("2026-11-24T09:00:00Z")]
        #expect(try ScheduleState.decode(older.encoded()) == older)
        let merged = older.merged(with: newer)
        #expect(
            merged.through == [
                "a": try Self.date("2026-11-24T10:05:00Z"), "b": try Self.date("2026-11-24T11:00:00Z"),
                "c": try Self.date("2026-11-24T09:00:00Z"),
            ])
        #expect(merged == newer.merged(with: older))
        let text = String(decoding: try older.encoded(), as: UTF8.self)
        #expect(
            text
                == #"{"schedules":{"a":{"through":"2026-11-24T10:00:00.000Z"},"b":{"through":"2026-11-24T11:00:00.000Z"}},"version":1}"#
        )
        #expect(throws: WarrenError.self) { try ScheduleState.decode(Array(#"{"version":2,"schedules":{}}"#.utf8)) }
        #expect(throws: WarrenError.self) { try ScheduleState.decode(Array("[]".utf8)) }
    }
}
