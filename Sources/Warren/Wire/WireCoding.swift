import Foundation

/// The JSON coders of the v1 wire format: ISO 8601 dates with fractional seconds, sorted keys.
///
/// Thread safety: immutable after creation; `JSONEncoder` and `JSONDecoder` are safe to use concurrently.
package enum WireCoding {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(text(of: date))
        }
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let date: Date
            if let seconds = try? container.decode(Double.self) {
                date = Date(timeIntervalSince1970: seconds)
            } else {
                let text = try container.decode(String.self)
                guard let parsed = (try? iso8601.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text)) else {
                    throw DecodingError.dataCorruptedError(
                        in: container,
                        debugDescription: "expected an ISO 8601 date or Unix seconds, got '\(text.prefix(100))'")
                }
                guard ISO8601Date.hasFieldsInRange(text) else {
                    throw DecodingError.dataCorruptedError(
                        in: container, debugDescription: "no such day or time: '\(text.prefix(100))'")
                }
                date = parsed
            }
            // Outside these years the ISO 8601 formatter writes what it cannot read back (negative years), so a
            // result echoing such a date would be unreadable.
            guard dateRange.contains(date.timeIntervalSince1970) else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription:
                        "date out of range: years 0001 to 9999 only, to the millisecond it is written with")
            }
            return date
        }
        return decoder
    }()

    static let iso8601 = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// Whether ISO 8601 text names a day and a time that exist (``ISO8601Date/hasFieldsInRange(_:)``): Foundation's
    /// parser reads `2027-02-30` as 2 March, and `24:30` as the next day.
    package static func namesExistingTime(_ text: String) -> Bool {
        ISO8601Date.hasFieldsInRange(text)
    }

    /// A date as the wire format writes it, rounded to the nearest millisecond (``ISO8601Date/append(_:to:)``).
    /// Before 1583, where Foundation's calendar turns Julian, Foundation writes it: it cuts the fraction to the
    /// millisecond, so the date is first rounded and then moved 0.4 ms later, which the cut drops.
    package static func text(of date: Date) -> String {
        var bytes: [UInt8] = []
        if ISO8601Date.append(date, to: &bytes) { return String(decoding: bytes.dropFirst().dropLast(), as: UTF8.self) }
        let rounded = (date.timeIntervalSinceReferenceDate * 1000).rounded() / 1000
        return Date(timeIntervalSinceReferenceDate: rounded + 0.000_4).formatted(iso8601)
    }

    /// Seconds since 1970 of the dates the wire format accepts: 0001-01-01T00:00:00Z up to what is written, rounded
    /// to the millisecond, as 9999-12-31T23:59:59.999Z (`.9999` would be written as the year 10000), as
    /// Foundation's ISO 8601 style reads them (in the Julian calendar before 1582).
    static let dateRange: Range<Double> = -62_135_769_600..<253_402_300_799.9995

    /// The AMQP content type of every Warren message.
    static let contentType = "application/json"
    /// The wire format version this build writes and reads.
    static let version = 1
}
