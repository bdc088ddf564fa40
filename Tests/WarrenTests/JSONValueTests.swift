import Foundation
import Testing

@_spi(Fuzzing) @testable import Warren

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

    @Test func printsAsCompactJSON() {
        let value: JSONValue = ["b": [1, 2.5, "x\n\"", .integer(9_007_199_254_740_993)], "a": nil, "c": ["d": true]]
        #expect("\(value)" == #"{"a":null,"b":[1,2.5,"x\n\"",9007199254740993],"c":{"d":true}}"#)
        #expect(JSONValue.number(.nan).description == "nan")
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
        let value = try JSONValue.parse(text)
        #expect(value == .array([.integer(9_007_199_254_740_993), .integer(-9_223_372_036_854_775_807)]))
        #expect(try encode(value) == text)
        var writer = JSONWriter()
        try writer.value(value)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == text)
        // The worker's own reader of descriptors reads it so too.
        let descriptor = #"{"version":1,"id":"a","type":"echo","input":"# + text + "}"
        #expect(DescriptorReader.descriptor(from: Array(descriptor.utf8), maxDepth: 64)?.input == value)
    }

    @Test func integersADoubleHoldsAreNumbers() throws {
        // 2^53 and 2^60 are exact as Doubles; so is the least Int64. Beyond Int64, a Double is the nearest.
        let value = try JSONValue.parse(
            "[9007199254740992,1152921504606846976,-9223372036854775808,18446744073709551616]")
        #expect(
            Identical.values(value, .array([.number(0x1p53), .number(0x1p60), .number(-0x1p63), .number(0x1p64)])))
        #expect(
            try JSONValue.parse("[9007199254740993.0,9.007199254740993e15]") == [
                9_007_199_254_740_993, 9_007_199_254_740_993,
            ])
        let literal: JSONValue = [9_007_199_254_740_993, 42]
        #expect(Identical.values(literal, .array([.integer(9_007_199_254_740_993), .number(42)])))
    }

    @Test func anIntegerBuiltByHandEqualsTheNumberItHolds() {
        #expect(JSONValue.integer(5) == .number(5))
        #expect(Set<JSONValue>([.integer(5), .number(5), .object(["n": .integer(-7)])]) == [.number(5), ["n": -7]])
        #expect(JSONValue.integer(9_007_199_254_740_993) != .number(9_007_199_254_740_992))
        #expect(JSONValue.integer(5) != .string("5"))
    }

    @Test func typedInputsGetTheExactInteger() throws {
        struct Input: Decodable { let id: Int64 }
        let input = try JSONValue.parse(#"{"id":9007199254740993}"#).decode(as: Input.self)
        #expect(input.id == 9_007_199_254_740_993)
        #expect(try JSONValue(encoding: ["id": Int64.max]) == .object(["id": .integer(.max)]))
    }

    @Test func roundTripsThroughTheWireCoders() throws {
        let value = try JSONValue.parse(#"[null, true, 0, -1.5, "x", {"nested": [[], {}]}]"#)
        let data = try WireCoding.encoder.encode(value)
        #expect(try WireCoding.decoder.decode(JSONValue.self, from: data) == value)
    }
}
