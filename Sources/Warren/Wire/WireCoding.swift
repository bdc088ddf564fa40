import Foundation

/// The JSON coders of the v1 wire format: ISO 8601 dates with fractional seconds, sorted keys.
///
/// Thread safety: immutable after creation; `JSONEncoder` and `JSONDecoder` are safe to use concurrently.
enum WireCoding {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(iso8601))
        }
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            if let seconds = try? container.decode(Double.self) {
                return Date(timeIntervalSince1970: seconds)
            }
            let text = try container.decode(String.self)
            if let date = (try? iso8601.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text)) {
                return date
            }
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "expected an ISO 8601 date or Unix seconds, got '\(text)'")
        }
        return decoder
    }()

    static let iso8601 = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// The AMQP content type of every Warren message.
    static let contentType = "application/json"
    /// The wire format version this build writes and reads.
    static let version = 1
}
