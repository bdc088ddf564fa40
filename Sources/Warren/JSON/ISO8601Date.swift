import Foundation

/// Dates of the wire format read and written with integer arithmetic, for the fast paths of ``DescriptorReader``
/// and ``JSONWriter``: the same `Date` as `Date.ISO8601FormatStyle` parses, the same text as
/// ``WireCoding/iso8601`` formats, for years 1583 … 9999 only.
///
/// Before 1583 Foundation's Gregorian calendar turns Julian, which this does not follow, so such dates are left to
/// Foundation. The tests compare both ways against Foundation.
///
/// Thread safety: stateless.
enum ISO8601Date {
    /// Seconds from 1970-01-01 to Foundation's reference date, 2001-01-01.
    private static let referenceDateSince1970 = 978_307_200
    private static let years = 1583...9999

    /// The date of `text` when it is `YYYY-MM-DDTHH:MM:SS`, then optionally `.` and 1 to 9 digits, then `Z` or
    /// `±HH:MM` (hours up to 17), with every field in its range; `nil` for anything else, which is left to
    /// Foundation (its parser is more lenient: it rolls `24:00:00` and February 30 over into the next day).
    static func date(parsing text: UnsafeBufferPointer<UInt8>) -> Date? {
        var reader = DigitReader(text: text)
        guard let year = reader.number(digits: 4), years.contains(year), reader.skip("-"),
            let month = reader.number(digits: 2), (1...12).contains(month), reader.skip("-"),
            let day = reader.number(digits: 2), (1...daysIn(month: month, year: year)).contains(day), reader.skip("T"),
            let hour = reader.number(digits: 2), hour < 24, reader.skip(":"),
            let minute = reader.number(digits: 2), minute < 60, reader.skip(":"),
            let second = reader.number(digits: 2), second < 60
        else { return nil }
        var fraction = 0
        var fractionScale = 1
        if reader.skip(".") {
            while fractionScale < 1_000_000_000, let digit = reader.number(digits: 1) {
                fraction = fraction * 10 + digit
                fractionScale *= 10
            }
            guard fractionScale > 1 else { return nil }
        }
        var offset = 0
        if !reader.skip("Z") {
            let sign = reader.skip("+") ? 1 : reader.skip("-") ? -1 : 0
            guard sign != 0, let hours = reader.number(digits: 2), hours < 18, reader.skip(":"),
                let minutes = reader.number(digits: 2), minutes < 60
            else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        }
        guard reader.isAtEnd else { return nil }
        let seconds =
            daysSince1970(year: year, month: month, day: day) * 86400 + hour * 3600 + minute * 60 + second - offset
            - referenceDateSince1970
        // The same arithmetic as Foundation's: whole seconds, plus the fraction as one division.
        return Date(timeIntervalSinceReferenceDate: Double(seconds) + Double(fraction) / Double(fractionScale))
    }

    /// Appends `date` as the wire format writes it (`2026-11-22T02:21:43.711Z`), rounded to the nearest
    /// millisecond, so that a date read from text with milliseconds (`.813`, which a `Double` holds as
    /// `.81299…`) is written back as it was; returns `true`, or `false` and appends nothing outside years
    /// 1583 … 9999.
    static func append(_ date: Date, to bytes: inout [UInt8]) -> Bool {
        let totalMilliseconds = (date.timeIntervalSinceReferenceDate * 1000).rounded()
        guard totalMilliseconds.magnitude < 1e15 else { return false }
        let whole = Int(totalMilliseconds).floorDividing(by: 1000)
        let milliseconds = Int(totalMilliseconds) - whole * 1000
        let seconds = whole + referenceDateSince1970
        let days = seconds.floorDividing(by: 86400)
        let (year, month, day) = civilDate(daysSince1970: days)
        guard years.contains(year) else { return false }
        let secondOfDay = seconds - days * 86400
        let start = bytes.count
        bytes.append(contentsOf: template)
        bytes.withUnsafeMutableBufferPointer { text in
            // Writes `value` in decimal over the `width` zeros at `offset` in the template.
            func write(_ value: Int, width: Int, at offset: Int) {
                var rest = value
                for index in (start + offset..<start + offset + width).reversed() {
                    text[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            write(year, width: 4, at: 1)
            write(month, width: 2, at: 6)
            write(day, width: 2, at: 9)
            write(secondOfDay / 3600, width: 2, at: 12)
            write(secondOfDay / 60 % 60, width: 2, at: 15)
            write(secondOfDay % 60, width: 2, at: 18)
            write(milliseconds, width: 3, at: 21)
        }
        return true
    }

    /// A written date, quotes included, before its digits are filled in.
    private static let template = Array(#""0000-00-00T00:00:00.000Z""#.utf8)

    /// Whether text that starts `YYYY-MM-DDTHH:MM:SS` names fields that exist: a day its month has (a leap day
    /// in Julian leap years before 1583, as Foundation's calendar counts them; none of 5 … 14 October 1582),
    /// hours below 24, minutes and seconds below 60. Foundation's parser rolls such text over into the next day or
    /// month instead of refusing it. Text of another shape is left to Foundation: `true`.
    static func hasFieldsInRange(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var reader = DigitReader(text: bytes)
            // Fields of one digit too (`2027-2-30T9:75:00Z`), which Foundation also reads, and rolls over alike.
            guard let year = reader.number(digits: 4), reader.skip("-"), let month = reader.number(upTo: 2),
                reader.skip("-"), let day = reader.number(upTo: 2), reader.skip("T"),
                let hour = reader.number(upTo: 2), reader.skip(":"), let minute = reader.number(upTo: 2),
                reader.skip(":"), let second = reader.number(upTo: 2)
            else { return true }
            guard (1...12).contains(month) else { return false }
            // An offset's minutes (`+05:75`) too.
            if reader.skip(".") { while reader.number(digits: 1) != nil {} }
            if reader.skip("+") || reader.skip("-") {
                guard reader.number(upTo: 2) != nil else { return false }
                _ = reader.skip(":")
                guard let offsetMinutes = reader.number(upTo: 2), offsetMinutes < 60 else { return false }
            }
            // Foundation's calendar goes from the Julian 4 October 1582 to the Gregorian 15th: the days between
            // name none (it would read them ten days on).
            if year == 1582 && month == 10 && (5...14).contains(day) { return false }
            let days = month == 2 && year < 1583 && year % 4 == 0 ? 29 : daysIn(month: month, year: year)
            return (1...days).contains(day) && hour < 24 && minute < 60 && second < 60
        }
    }

    private static func isLeapYear(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // The two conversions below are Howard Hinnant's `days_from_civil` and `civil_from_days` for the proleptic
    // Gregorian calendar, with years counted from March so that February's leap day comes last.

    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear.floorDividing(by: 400)
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilDate(daysSince1970 days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = shifted.floorDividing(by: 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Reads fixed-width decimal fields and separators from the front of a date's text.
    private struct DigitReader {
        let text: UnsafeBufferPointer<UInt8>
        var position = 0

        var isAtEnd: Bool { position == text.count }

        mutating func skip(_ separator: Unicode.Scalar) -> Bool {
            guard position < text.count, text[position] == UInt8(ascii: separator) else { return false }
            position += 1
            return true
        }

        /// The value of the next 1 to `limit` ASCII digits (as many as there are); `nil` if none comes next.
        mutating func number(upTo limit: Int) -> Int? {
            var value: Int?
            var count = 0
            while count < limit, position < text.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[position])
            {
                value = (value ?? 0) * 10 + Int(text[position] - UInt8(ascii: "0"))
                position += 1
                count += 1
            }
            return value
        }

        /// The value of the next `digits` bytes if they are all ASCII digits; otherwise `nil`, consuming nothing.
        mutating func number(digits: Int) -> Int? {
            guard text.count - position >= digits else { return nil }
            var value = 0
            for byte in text[position..<position + digits] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            position += digits
            return value
        }
    }
}

extension Int {
    /// The quotient rounded towards minus infinity (`/` rounds towards zero).
    fileprivate func floorDividing(by divisor: Int) -> Int {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
