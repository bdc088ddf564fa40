import Foundation

/// A cron schedule: five fields (minute hour day-of-month month day-of-week), as Vixie cron reads them.
///
/// - Fields: minute 0-59, hour 0-23, day of the month 1-31, month 1-12 or `jan`…`dec`, day of the week 0-7
///   (0 and 7 are Sunday) or `sun`…`sat`; names in any case. Each field is a comma list of `*`, `N`, `A-B`, `*/S`,
///   `A-B/S` or `N/S` (from N to the field's maximum, every S); names work in ranges (`mon-fri`).
/// - Macros: `@yearly` (or `@annually`), `@monthly`, `@weekly`, `@daily` (or `@midnight`), `@hourly`.
/// - Days: when both day fields are restricted (neither begins with `*`), a day matches if either does
///   (`0 0 1 * mon` is the 1st and every Monday); otherwise both must.
/// - Time zones: a wall-clock time that a daylight-saving transition skips does not occur that day; one that occurs
///   twice matches at its first occurrence only.
///
/// Thread safety: immutable.
public struct CronExpression: Sendable, Equatable, CustomStringConvertible {
    /// The text as given, trimmed.
    public let description: String
    // Bit n set: value n matches. Days of the week hold Sunday as 0 only.
    private let minutes: UInt64
    private let hours: UInt64
    private let daysOfMonth: UInt64
    private let months: UInt64
    private let daysOfWeek: UInt64
    private let eitherDayMatches: Bool

    /// Reads a cron expression.
    ///
    /// - Throws: ``WarrenError`` with code ``WarrenError/Code/invalidSchedule`` naming the field and the part that is
    ///   wrong, or saying that the expression never matches (`0 0 30 2 *`).
    public init(_ text: String) throws {
        description = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let needs = "5 (minute hour day-of-month month day-of-week) or a macro (\(Self.macroNames))"
        guard !description.isEmpty else { throw Self.error("cron expression is empty; it needs \(needs)") }
        let fields: [Substring]
        if description.hasPrefix("@") {
            guard let expansion = Self.macros[description.lowercased()] else {
                throw Self.error("unknown cron macro '\(description)'; use one of \(Self.macroNames)")
            }
            fields = expansion.split(separator: " ")
        } else {
            fields = description.split(whereSeparator: \.isWhitespace)
        }
        guard fields.count == 5 else {
            let count = fields.count == 1 ? "1 field" : "\(fields.count) fields"
            throw Self.error("cron expression '\(description)' has \(count); it needs \(needs)")
        }
        var sets: [UInt64] = []
        for (index, field) in Self.fields.enumerated() {
            do {
                sets.append(try field.parse(fields[index]))
            } catch {
                throw Self.error("cron field \(index + 1) (\(field.name)) of '\(description)': \(error.message)")
            }
        }
        minutes = sets[0]
        hours = sets[1]
        daysOfMonth = sets[2]
        months = sets[3]
        // Sunday is 0 or 7: fold 7 onto 0 so that a day's weekday has one bit to test.
        daysOfWeek = (sets[4] & 0x7f) | (sets[4] >> 7)
        eitherDayMatches = !fields[2].hasPrefix("*") && !fields[4].hasPrefix("*")
        // A weekday (in "either" mode) occurs in every month, but a day of the month only in months long enough.
        // When a weekday must match too, some year brings it: a date's weekday moves on a day or two every year.
        let firstDay = daysOfMonth.trailingZeroBitCount
        let longest = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard eitherDayMatches || (1...12).contains(where: { months >> $0 & 1 == 1 && firstDay <= longest[$0 - 1] })
        else {
            throw Self.error("cron expression '\(description)' never matches: none of its months has any of its days")
        }
    }

    /// The first instant strictly after `date` (second 0 of a minute) whose wall-clock time in `timeZone` matches;
    /// `nil` if none does: the Gregorian calendar repeats every 400 years, so a date that falls on a weekday it asks
    /// for (29 February on a Sunday) is found however rare.
    public func next(after date: Date, in timeZone: TimeZone) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        // Whole seconds first, so that a fraction just under a minute cannot round up into the next one.
        let whole = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
        let start = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: whole)
        guard var year = start.year, var month = start.month, var day = start.day, var hour = start.hour,
            var minute = start.minute
        else { return nil }
        minute += 1
        let lastYear = year + 400
        // Search wall-clock time by plain arithmetic (a field that does not match skips a whole month, day or hour;
        // an overflow such as minute 60 finds no match and carries), and only map a match to an instant in the zone.
        while year <= lastYear {
            guard let nextMonth = Self.first(months, from: month) else {
                (year, month, day, hour, minute) = (year + 1, 1, 1, 0, 0)
                continue
            }
            if nextMonth != month { (month, day, hour, minute) = (nextMonth, 1, 0, 0) }
            guard day <= Self.length(ofMonth: month, in: year) else {
                (month, day, hour, minute) = (month + 1, 1, 0, 0)
                continue
            }
            let days = Self.daysSince1970(year: year, month: month, day: day)
            // 1970-01-01 was a Thursday (4).
            guard matches(dayOfMonth: day, dayOfWeek: ((days + 4) % 7 + 7) % 7),
                let nextHour = Self.first(hours, from: hour)
            else {
                (day, hour, minute) = (day + 1, 0, 0)
                continue
            }
            if nextHour != hour { (hour, minute) = (nextHour, 0) }
            guard let nextMinute = Self.first(minutes, from: minute) else {
                (hour, minute) = (hour + 1, 0)
                continue
            }
            minute = nextMinute
            let wall = days * 86_400 + hour * 3_600 + minute * 60
            // Later than a match only from a repeated hour's second pass, whose minutes fired in its first.
            if let instant = Self.firstInstant(ofWallClock: wall, in: timeZone), instant > date { return instant }
            minute += 1
        }
        return nil
    }

    private func matches(dayOfMonth: Int, dayOfWeek: Int) -> Bool {
        let inMonth = daysOfMonth >> dayOfMonth & 1 == 1
        let inWeek = daysOfWeek >> dayOfWeek & 1 == 1
        return eitherDayMatches ? inMonth || inWeek : inMonth && inWeek
    }

    /// The smallest value in `set` at least `value`.
    private static func first(_ set: UInt64, from value: Int) -> Int? {
        let rest = value < 64 ? (set >> value) << value : 0
        return rest == 0 ? nil : rest.trailingZeroBitCount
    }

    private static func length(ofMonth month: Int, in year: Int) -> Int {
        guard month == 2 else { return [31, 0, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] }
        return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
    }

    /// Days from 1970-01-01 to a Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        return era * 146_097 + yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear - 719_468
    }

    /// The earliest instant at which the wall clock of `zone` reads `wall` (seconds since 1970 as if the zone were
    /// UTC), or `nil` when a transition skips that time.
    private static func firstInstant(ofWallClock wall: Int, in zone: TimeZone) -> Date? {
        func offset(at seconds: Int) -> Int { zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(seconds))) }
        // Transitions are far more than a day apart, so the offsets in force a day either side are the only ones
        // the clock can have read `wall` with; each candidate is real only if its offset is in force at it.
        let candidates = Set([-86_400, 0, 86_400].map { wall - offset(at: wall + $0) })
        return candidates.filter { offset(at: $0) == wall - $0 }.min().map { Date(timeIntervalSince1970: Double($0)) }
    }

    private static func error(_ message: String) -> WarrenError { WarrenError(.invalidSchedule, message) }

    private static let macros = [
        "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
        "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
    ]
    private static let macroNames = "@yearly, @monthly, @weekly, @daily, @hourly"

    private static let fields = [
        Field(name: "minute", bounds: 0...59),
        Field(name: "hour", bounds: 0...23),
        Field(name: "day-of-month", bounds: 1...31),
        Field(
            name: "month", bounds: 1...12,
            names: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]),
        Field(name: "day-of-week", bounds: 0...7, names: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]),
    ]
}

/// What is wrong with one field, before the message names the field.
private struct Problem: Error {
    var message: String
}

/// One of the five fields: its range and the names of its first values.
private struct Field: Sendable {
    var name: String
    var bounds: ClosedRange<Int>
    var names: [String] = []

    /// The values `text` names, as bits.
    func parse(_ text: Substring) throws(Problem) -> UInt64 {
        var set: UInt64 = 0
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard !part.isEmpty else { throw Problem(message: "'\(text)' has an empty list item") }
            let pieces = part.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count <= 2 else { throw Problem(message: "'\(part)' has more than one step") }
            var step = 1
            if pieces.count == 2 {
                guard Self.isNumber(pieces[1]), let number = Int(pieces[1]), number >= 1 else {
                    throw Problem(message: "step '\(pieces[1])' in '\(part)' must be a whole number of at least 1")
                }
                step = number
            }
            var range = bounds
            if pieces[0] != "*" {
                let ends = pieces[0].split(separator: "-", omittingEmptySubsequences: false)
                guard ends.count <= 2 else { throw Problem(message: "'\(part)' is not a value or a range A-B") }
                let low = try value(ends[0], in: part)
                let open = pieces.count == 2 ? bounds.upperBound : low  // N/S runs to the maximum
                let high = try ends.count == 2 ? value(ends[1], in: part) : open
                guard low <= high else {
                    let wrapped =
                        bounds == 0...7 && high == 0
                        ? "\(low)-7" : "\(low)-\(bounds.upperBound),\(bounds.lowerBound)-\(high)"
                    let hint = pieces.count == 1 ? "; ranges do not wrap around, write \(wrapped)" : ""
                    throw Problem(message: "range '\(pieces[0])' is reversed (\(low) > \(high))\(hint)")
                }
                range = low...high
            }
            for value in stride(from: range.lowerBound, through: range.upperBound, by: step) { set |= 1 << value }
        }
        return set
    }

    private func value(_ text: Substring, in part: Substring) throws(Problem) -> Int {
        guard !text.isEmpty else { throw Problem(message: "'\(part)' is missing a value") }
        if let index = names.firstIndex(of: text.lowercased()) { return bounds.lowerBound + index }
        guard Self.isNumber(text) else {
            let known = names.isEmpty ? "" : " or a name (\(names.first!)-\(names.last!))"
            throw Problem(message: "'\(text)' is not a number\(known)")
        }
        guard let number = Int(text), bounds.contains(number) else {
            throw Problem(message: "\(text) is out of range \(bounds.lowerBound)-\(bounds.upperBound)")
        }
        return number
    }

    private static func isNumber(_ text: Substring) -> Bool { text.allSatisfy { $0.isASCII && $0.isNumber } }
}
