import Foundation
import Testing

@testable import Warren

private struct Order: Decodable {
    struct Line: Decodable {
        var sku: String
        var quantity: Int
    }

    var lines: [Line]
    var note: String
}

@Suite("DecodingError.summary")
struct DecodingErrorSummaryTests {
    private func summary(decoding text: String) throws -> String {
        let error = try #require(throws: DecodingError.self) {
            try WireCoding.decoder.decode(Order.self, from: Data(text.utf8))
        }
        return error.summary
    }

    @Test func typeMismatchNamesTheNestedPath() throws {
        let summary = try summary(
            decoding: #"{"lines": [{"sku": "a", "quantity": 1}, {"sku": "b", "quantity": "two"}], "note": ""}"#)
        #expect(summary == "input.lines[1].quantity: expected an integer")
    }

    @Test func missingKeyNamesTheObjectAndTheKey() throws {
        let summary = try summary(decoding: #"{"lines": [{"sku": "a"}], "note": ""}"#)
        #expect(summary == "input.lines[0]: missing key 'quantity'")
    }

    @Test func missingTopLevelKeyIsOnInput() throws {
        #expect(try summary(decoding: #"{"lines": []}"#) == "input: missing key 'note'")
    }

    @Test func nullWhereAValueIsNeededSaysFoundNull() throws {
        #expect(try summary(decoding: #"{"lines": [], "note": null}"#) == "input.note: expected a string, found null")
    }

    @Test func aWrongTopLevelTypeIsOnInput() throws {
        #expect(try summary(decoding: "[1, 2]").hasPrefix("input: expected "))
    }

    @Test func dataCorruptedKeepsItsDescription() {
        let context = DecodingError.Context(
            codingPath: [Order.CodingKeys.note], debugDescription: "not valid")
        #expect(DecodingError.dataCorrupted(context).summary == "input.note: not valid")
    }
}

extension Order {
    enum CodingKeys: String, CodingKey {
        case lines, note
    }
}
