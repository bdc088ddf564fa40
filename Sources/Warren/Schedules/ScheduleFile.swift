import Foundation

/// Schedules written as JSON, for `warren schedule FILE` and `warren worker --schedule FILE`:
///
/// ```json
/// {"schedules": [
///   {"name": "nightly-report", "cron": "0 3 * * *", "timeZone": "Europe/Paris", "type": "report",
///    "input": {"scope": "all"}, "queue": "reports", "key": "report", "supersede": true, "maxLateness": "1h"},
///   {"name": "heartbeat", "every": "30s", "type": "sleep", "input": {"seconds": 0}}
/// ]}
/// ```
///
/// Each schedule has a `name`, a `type`, and either `cron` (five fields, read on the wall clock of `timeZone`, UTC
/// unless given) or `every` (an interval); the other members are ``Schedule``'s. Lengths of time (`every`,
/// `deadline`, `timeLimit`, `uniqueFor`, `maxLateness`) are seconds, or a number with a unit: `30s`, `10m`, `2h`, `1d`.
///
/// Thread safety: immutable (a namespace).
public enum ScheduleFile {
    /// The members a schedule may have: any other is a mistake (`time_zone` for `timeZone`) that would drop what it
    /// meant silently.
    static let members: Set<String> = [
        "name", "cron", "every", "timeZone", "type", "input", "priority", "key", "supersede", "queue", "maxAttempts",
        "deadline", "timeLimit", "uniqueFor", "maxLateness",
    ]

    /// Reads and checks the schedules in the file at `path`.
    /// - Throws: ``WarrenError`` (`invalidSchedule`) naming the file, the schedule and what is wrong with it.
    public static func load(_ path: String) throws -> [Schedule] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw WarrenError(
                .invalidSchedule,
                "cannot read the schedule file '\(path)': \(Self.reason(reading: path) ?? "not a readable file")")
        }
        do {
            return try parse(data)
        } catch let error as WarrenError {
            throw WarrenError(.invalidSchedule, "the schedule file '\(path)': \(error.message)")
        }
    }

    /// Why `path` cannot be read, as the system says it (`No such file or directory`), if it says.
    private static func reason(reading path: String) -> String? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor < 0 else {
            close(descriptor)
            return nil
        }
        return String(cString: strerror(errno))
    }

    /// Reads and checks the schedules in `data`.
    /// - Throws: ``WarrenError`` (`invalidSchedule`) naming the schedule and what is wrong with it.
    public static func parse(_ data: Data) throws -> [Schedule] {
        if let offset = JSONText.trailingCommaOffset(in: Array(data)) {
            throw WarrenError(.invalidSchedule, "not JSON: a comma before a closing bracket at byte \(offset)")
        }
        guard let document = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw WarrenError(.invalidSchedule, "not JSON")
        }
        if case .object(let top) = document, let unknown = top.keys.sorted().first(where: { $0 != "schedules" }) {
            throw WarrenError(
                .invalidSchedule, "unknown member '\(unknown.prefix(64))' at the top: the file holds only \"schedules\""
            )
        }
        guard case .object(let top) = document, case .array(let entries)? = top["schedules"] else {
            throw WarrenError(
                .invalidSchedule, "expected {\"schedules\": [{\"name\", \"type\", \"cron\" or \"every\", …}]}")
        }
        guard !entries.isEmpty else { throw WarrenError(.invalidSchedule, "it lists no schedules") }
        var names: Set<String> = []
        return try entries.enumerated().map { index, entry in
            let schedule: Schedule
            do {
                schedule = try Entry(entry).schedule()
            } catch let error as WarrenError {
                let name = entry["name"].flatMap { if case .string(let name) = $0 { name } else { nil } }
                // The schedule's own check names it too: once is enough.
                var message = Substring(error.message)
                if let name, message.hasPrefix("schedule '\(name)'") {
                    message = message.dropFirst("schedule '\(name)'".count).drop { $0 == ":" || $0 == " " }
                }
                throw WarrenError(
                    .invalidSchedule, "schedules[\(index)]\(name.map { " ('\($0)')" } ?? ""): \(message)")
            }
            guard names.insert(schedule.name).inserted else {
                throw WarrenError(.invalidSchedule, "schedule name '\(schedule.name)' is given twice")
            }
            return schedule
        }
    }

    /// One schedule's members, read with a message for each mistake.
    private struct Entry {
        let members: [String: JSONValue]

        init(_ value: JSONValue) throws {
            guard case .object(let members) = value else { throw WarrenError(.invalidSchedule, "not an object") }
            if let unknown = members.keys.sorted().first(where: { !ScheduleFile.members.contains($0) }) {
                throw WarrenError(
                    .invalidSchedule,
                    "unknown member '\(unknown)' (a schedule has \(ScheduleFile.members.sorted().joined(separator: ", ")))"
                )
            }
            self.members = members
        }

        func schedule() throws -> Schedule {
            let name = try string("name") ?? { throw WarrenError(.invalidSchedule, "it has no name") }()
            guard let type = try string("type") else { throw WarrenError(.invalidSchedule, "it has no type") }
            var schedule = Schedule(name: name, recurrence: try recurrence(), type: type)
            schedule.input = members["input"] ?? .null
            if let priority = try string("priority") {
                guard let level = JobPriority(rawValue: priority) else {
                    throw WarrenError(.invalidSchedule, JobPriority.problem(withName: priority))
                }
                schedule.priority = level
            }
            schedule.key = try string("key")
            schedule.supersede = try bool("supersede") ?? false
            schedule.queue = try string("queue") ?? Topology.defaultQueue
            if let attempts = members["maxAttempts"] {
                guard case .number(let count) = attempts, count == count.rounded(), count >= 1, count <= 1_000_000
                else {
                    throw WarrenError(.invalidSchedule, "maxAttempts must be a whole number, at least 1")
                }
                schedule.maxAttempts = Int(count)
            }
            schedule.deadline = try duration("deadline")
            schedule.timeLimit = try duration("timeLimit")
            schedule.uniqueFor = try duration("uniqueFor")
            schedule.maxLateness = try duration("maxLateness")
            if let problem = schedule.problem { throw WarrenError(.invalidSchedule, problem) }
            return schedule
        }

        /// Whether `name` names a zone of the tz database: one Foundation lists, or a link to one that the system's
        /// database holds (`Etc/UTC`, `Etc/GMT+5`, `US/Eastern`, `Japan`), which Foundation leaves out of its list.
        private static func isTimeZoneName(_ name: String) -> Bool {
            if ["UTC", "GMT"].contains(name) || TimeZone.knownTimeZoneIdentifiers.contains(name) { return true }
            let parts = name.split(separator: "/", omittingEmptySubsequences: false)
            guard !name.isEmpty, name.count <= 64, !["posix", "right"].contains(parts[0]),
                parts.allSatisfy({ part in
                    !part.isEmpty && part.first != "."
                        && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_+-".contains($0)) }
                })
            else { return false }
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/\(name)", isDirectory: &isDirectory)
                && !isDirectory.boolValue
        }

        private func recurrence() throws -> Recurrence {
            switch (try string("cron"), try duration("every")) {
            case (let cron?, nil):
                let zoneName = try string("timeZone") ?? "UTC"
                // Foundation also takes abbreviations and offsets ("PST", "GMT+5"), which read otherwise than the
                // IANA names they resemble ("Etc/GMT+5" is five hours behind UTC): only names of the tz database.
                guard Self.isTimeZoneName(zoneName), let zone = TimeZone(identifier: zoneName) else {
                    throw WarrenError(
                        .invalidSchedule, "time zone '\(zoneName)' is unknown (an IANA name: Europe/Paris, UTC)")
                }
                return .cron(try CronExpression(cron), zone)
            case (nil, let interval?):
                guard members["timeZone"] == nil else {
                    throw WarrenError(.invalidSchedule, "timeZone goes with cron, not with every")
                }
                return .every(interval)
            case (.some, .some):
                throw WarrenError(.invalidSchedule, "it has both cron and every; give one")
            case (nil, nil):
                throw WarrenError(.invalidSchedule, "it has neither cron nor every")
            }
        }

        private func string(_ member: String) throws -> String? {
            guard let value = members[member] else { return nil }
            guard case .string(let text) = value else {
                throw WarrenError(.invalidSchedule, "\(member) must be a string")
            }
            return text
        }

        private func bool(_ member: String) throws -> Bool? {
            guard let value = members[member] else { return nil }
            guard case .bool(let flag) = value else {
                throw WarrenError(.invalidSchedule, "\(member) must be true or false")
            }
            return flag
        }

        /// Seconds, or a string: a number and a unit (`s`, `m`, `h`, `d`).
        private func duration(_ member: String) throws -> Duration? {
            guard let value = members[member] else { return nil }
            var seconds: Double?
            switch value {
            case .number(let number): seconds = number
            // As on the command line: "90" is seconds too, "250ms" milliseconds.
            case .string(let text): seconds = DurationText.seconds(text)
            default: break
            }
            guard let seconds, seconds >= 0, seconds <= 10 * 365 * 86_400 else {
                throw WarrenError(
                    .invalidSchedule,
                    "\(member) must be seconds, or a number with a unit (250ms, 30s, 10m, 2h, 1d), up to ten years")
            }
            let milliseconds = Int64((seconds * 1000).rounded())
            if milliseconds == 0, seconds > 0 {
                throw WarrenError(
                    .invalidSchedule, "\(member) is kept to the millisecond, and \(seconds) s is less than half of one")
            }
            return .milliseconds(milliseconds)
        }
    }
}
