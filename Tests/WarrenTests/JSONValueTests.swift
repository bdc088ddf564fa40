import Foundation
import Testing

@testable import Warren

@Suite("JSONValue")
struct JSONValueTests {
    private func encode(_ value: JSONValue) throws -> String {
        String(decoding: try WireCoding.encoder.encode(value), as: UTF8.self)
    }

    @Test func decodesEveryKindOfValue() throws {
        let value = try JSONValue.parse(
            #"""
            {"null": null, "bool": true, "int": 3, "double": 2.5, "string": "s", "array": [1, "a"],
             "object": {"k": false}}
            """#
        )
        #expect(value["null"] == .null)
        #expect(value["bool"] == .bool(true))
        #expect(value["int"] == .number(3))
        #expect(value["double"] == .number(2.5))
        #expect(value["string"] == .string("s"))
        #expect(value["array"] == .array([.number(1), .string("a")]))
        #expect(value["object"] == .object(["k": .bool(false)]))
        #expect(value["missing"] == nil)
        #expect(JSONValue.string("s")["k"] == nil)
    }

    @Test func wholeNumbersEncodeWithoutAFraction() throws {
        #expect(try encode(.number(3)) == "3")
        #expect(try encode(.number(-12)) == "-12")
        #expect(try encode(.number(2.5)) == "2.5")
        #expect(try encode(.array([.number(1), .number(1.25)])) == "[1,1.25]")
    }

    @Test func encodesObjectsWithSortedKeys() throws {
        #expect(try encode(.object(["b": .null, "a": .bool(false)])) == #"{"a":false,"b":null}"#)
    }

    @Test func convertsThroughCodableTypes() throws {
        let value = try JSONValue(encoding: SumInput(numbers: [1, 2], delayMs: nil))
        #expect(value == .object(["numbers": .array([.number(1), .number(2)])]))
        let input = try value.decode(as: SumInput.self)
        #expect(input.numbers == [1, 2])
        #expect(input.delayMs == nil)
    }

    @Test func integersBeyondDoublePrecisionSurviveARoundTrip() throws {
        // 2^53 + 1: a 64-bit id a foreign client may well put in an input.
        let text = "[9007199254740993,-9223372036854775807]"
        let encoded = try encode(.parse(text))
        withKnownIssue("JSONValue keeps every number as a Double, so integers past 2^53 are silently rounded") {
            #expect(encoded == text)
        }
    }

    @Test func roundTripsThroughTheWireCoders() throws {
        let value = try JSONValue.parse(#"[null, true, 0, -1.5, "x", {"nested": [[], {}]}]"#)
        let data = try WireCoding.encoder.encode(value)
        #expect(try WireCoding.decoder.decode(JSONValue.self, from: data) == value)
    }
}
