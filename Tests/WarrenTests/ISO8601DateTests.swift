import Foundation
import Testing

@testable import Warren

/// The integer-arithmetic dates against Foundation's ISO 8601 style, both ways, bit for bit.
@Suite("ISO8601Date")
struct ISO8601DateTests {
    private static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { ISO8601Date.date(parsing: $0) }
    }

    @Test func parsesAsFoundationDoesWithEveryFractionAndOffset() throws {
        var generator = SeededGenerator(seed: 9)
        func digits(_ count: Int) -> String {
            (0..<count).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
        }
        for _ in 0..<3000 {
            // Any second of the years 1583 ... 9999, as Foundation writes it without its "Z".
            let second = Double(Int.random(in: -13_190_860_800...252_423_993_599, using: &generator))
            var text = String(Date(timeIntervalSinceReferenceDate: second).formatted(.iso8601).dropLast())
            let fractionDigits = Int.random(in: 0...9, using: &generator)
            if fractionDigits > 0 { text += "." + digits(fractionDigits) }
            if Bool.random(using: &generator) {
                text += "Z"
            } else {
                let hours = Int.random(in: 0...17, using: &generator)
                text += (Bool.random(using: &generator) ? "+" : "-") + (hours < 10 ? "0\(hours):" : "\(hours):")
                text += String(Int.random(in: 0...5, using: &generator)) + digits(1)
            }
            let expected = try WireCoding.iso8601.parse(text).timeIntervalSinceReferenceDate
            let parsed = try #require(Self.parse(text), "declined \(text)").timeIntervalSinceReferenceDate
            #expect(parsed.bitPattern == expected.bitPattern, "\(text): \(parsed) but Foundation \(expected)")
        }
    }

    @Test(arguments: [
        "2030-01-01T24:00:00Z", "2030-02-29T00:00:00Z", "2030-04-31T00:00:00Z", "2030-01-01T00:60:00Z",
        "2030-01-01T00:00:60Z", "2030-01-01T00:00:00z", "2030-01-01t00:00:00Z", "2030-01-01 00:00:00Z",
        "2030-01-01T00:00:00Z ", "2030-01-01T00:00:00.Z", "2030-01-01T00:00:00.1234567890Z", "2030-01-01T00:00:00+0100",
        "2030-01-01T00:00:00+18:00", "2030-01-01T00:00:00", "2030-01-01", "1582-12-31T23:59:59Z",
        "+2030-01-01T00:00:00Z", "20300101T000000Z", "2030-1-01T00:00:00Z", "",
    ])
    func declinesWhatItDoesNotReadExactly(_ text: String) {
        #expect(Self.parse(text) == nil)
    }

    /// Foundation's parser rolls these over into a later day; the wire format refuses them.
    @Test(arguments: [
        "2030-02-30T00:00:00Z", "2029-02-29T00:00:00Z", "2030-04-31T00:00:00Z", "2030-01-01T24:00:00Z",
        "2030-01-01T23:59:60Z", "2030-01-01T23:60:00Z", "2030-13-01T00:00:00Z", "1500-02-30T00:00:00Z",
        // The days Foundation's calendar skips from the Julian to the Gregorian: it read them ten days on.
        "1582-10-05T00:00:00Z", "1582-10-14T23:59:59Z",
        // Fields of one digit, which Foundation reads and rolls over the same way; an offset's minutes.
        "2027-2-30T10:00:00Z", "2027-02-31T1:00:00Z", "2027-02-28T9:75:00Z", "2027-02-28T24:0:00Z",
        "2027-02-28T10:0:75Z", "1582-10-5T10:00:00Z", "2027-02-28T10:00:00+05:75",
    ])
    func refusesFieldsOutOfRange(_ text: String) {
        struct Stamp: Decodable { let at: Date }
        #expect(!ISO8601Date.hasFieldsInRange(text))
        let decoded = try? WireCoding.decoder.decode(Stamp.self, from: Data(#"{"at":"\#(text)"}"#.utf8))
        #expect(decoded == nil, "\(text) read as \(decoded.map { "\($0.at)" } ?? "")")
    }

    @Test(arguments: [
        "2028-02-29T00:00:00Z", "1500-02-29T12:00:00Z", "2030-12-31T23:59:59.999+05:00", "2030-01-01",
        "1582-10-04T23:59:59Z", "1582-10-15T00:00:00Z", "2027-2-28T9:05:00Z", "2027-02-28T10:00:00.5+05:30",
        "2027-02-28T10:00:00-0530",
    ])
    func acceptsFieldsInRange(_ text: String) {
        #expect(ISO8601Date.hasFieldsInRange(text))
    }

    /// The same text as Foundation writes for the date rounded to the millisecond (and moved 0.4 ms later, since
    /// Foundation cuts the fraction), which is what the wire format writes where this does not.
    @Test func writesAsFoundationFormatsTheRoundedDate() {
        var generator = SeededGenerator(seed: 10)
        for _ in 0..<3000 {
            let interval = Double.random(in: -13_190_860_800...252_423_993_599.499, using: &generator)
            var bytes: [UInt8] = []
            #expect(ISO8601Date.append(Date(timeIntervalSinceReferenceDate: interval), to: &bytes))
            let rounded = Date(timeIntervalSinceReferenceDate: (interval * 1000).rounded() / 1000 + 0.000_4)
            #expect(
                String(decoding: bytes, as: UTF8.self) == "\"\(rounded.formatted(WireCoding.iso8601))\"",
                "\(interval)")
        }
    }

    /// Milliseconds read from text are written back as they were, by both writers: `.813` is `.81299…` as a
    /// `Double`, which a writer that cut the fraction wrote as `.812`.
    @Test func millisecondsSurviveReadingAndWriting() throws {
        struct Stamp: Codable { let at: Date }
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<2000 {
            let seconds = Int.random(in: -13_190_860_800...252_423_993_599, using: &generator)
            let whole = String(Date(timeIntervalSinceReferenceDate: Double(seconds)).formatted(.iso8601).dropLast())
            let text = whole + "." + String(format: "%03d", Int.random(in: 0...999, using: &generator)) + "Z"
            let date = try WireCoding.decoder.decode(Stamp.self, from: Data(#"{"at":"\#(text)"}"#.utf8)).at
            var bytes: [UInt8] = []
            #expect(ISO8601Date.append(date, to: &bytes))
            #expect(String(decoding: bytes, as: UTF8.self) == "\"\(text)\"")
            #expect(WireCoding.text(of: date) == text)
        }
        // Before 1583 Foundation writes the date, and keeps the milliseconds too.
        let julian = try WireCoding.decoder.decode(Stamp.self, from: Data(#"{"at":"1500-03-01T10:20:30.813Z"}"#.utf8))
        #expect(WireCoding.text(of: julian.at) == "1500-03-01T10:20:30.813Z")
    }

    /// The last date of year 9999 that is written back as it was read: `.9994` is written `.999`; `.9995` would be
    /// written as the year 10000, which the wire format has no room for.
    @Test func theLastMillisecondOfYear9999() throws {
        struct Stamp: Decodable { let at: Date }
        for (text, accepted) in [
            ("9999-12-31T23:59:59.999Z", true), ("9999-12-31T23:59:59.9994Z", true),
            ("9999-12-31T23:59:59.9999Z", false),
        ] {
            let decoded = try? WireCoding.decoder.decode(Stamp.self, from: Data(#"{"at":"\#(text)"}"#.utf8))
            #expect((decoded != nil) == accepted, "\(text)")
            if let decoded { #expect(WireCoding.text(of: decoded.at) == "9999-12-31T23:59:59.999Z") }
        }
    }
}
