import Foundation
import Testing

@testable import Warren

/// Bodies in UTF-16 and UTF-32 meet the same limits as UTF-8 ones, and an unreadable descriptor's id is found as
/// the first `id` member, whatever else the body holds.
@Suite struct JSONTextTests {
    static let descriptor = #"{"version":1,"id":"job-1","type":"echo","input":{"s":"∀"}}"#

    static func encoded(_ text: String, _ encoding: String.Encoding) -> [UInt8] {
        Array(text.data(using: encoding)!)
    }

    @Test("every encoding a worker reads, with and without a byte order mark, decodes to the same descriptor")
    func encodings() throws {
        let encodings: [String.Encoding] = [
            .utf8, .utf16LittleEndian, .utf16BigEndian, .utf16, .utf32LittleEndian, .utf32BigEndian, .utf32,
        ]
        for encoding in encodings {
            let descriptor = try JobDecoder().decode(Self.encoded(Self.descriptor, encoding), contentType: nil)
            #expect(descriptor.id == "job-1" && descriptor.input == ["s": "∀"], "\(encoding)")
        }
        let utf32LittleWithMark: [UInt8] = [0xFF, 0xFE, 0x00, 0x00] + Self.encoded(Self.descriptor, .utf32LittleEndian)
        #expect(try JobDecoder().decode(utf32LittleWithMark, contentType: nil).id == "job-1")
        let utf8WithMark: [UInt8] = [0xEF, 0xBB, 0xBF] + Array(Self.descriptor.utf8)
        #expect(try JobDecoder().decode(utf8WithMark, contentType: nil).id == "job-1")
    }

    @Test("the nesting limit counts the text, not its bytes: UTF-16 neither slips past it nor trips it")
    func nestingInUTF16() throws {
        // U+2200 is 00 22 in UTF-16LE: a byte count would take it for a quote, and the brackets after it for text.
        let deep =
            #"{"version":1,"id":"deep","type":"echo","input":{"s":"∀"},"x":"#
            + String(repeating: "[", count: 400) + String(repeating: "]", count: 400) + "}"
        let error = #expect(throws: JobError.self) {
            try JobDecoder().decode(Self.encoded(deep, .utf16LittleEndian), contentType: nil)
        }
        #expect(error?.code == "invalidDescriptor" && error?.message.contains("deeper than the limit") == true)
        // 娛 is 5B 5B: two "[" to a byte count.
        let flat =
            #"{"version":1,"id":"flat","type":"echo","input":"∀"# + String(repeating: "孛", count: 70) + #"∀"}"#
        #expect(try JobDecoder().decode(Self.encoded(flat, .utf16LittleEndian), contentType: nil).id == "flat")
    }

    @Test(
        "a trailing comma, which Foundation's parser takes, is a malformed message, in any encoding",
        arguments: [
            (#"{"version":1,"id":"t","type":"echo","input":1,}"#, 45),
            (#"{"version":1,"id":"t","type":"echo","input":[1,2 , ]}"#, 49),
            (#"{"version":1,"id":"t","type":"echo","input":{"a":[],"b":{},}}"#, 58),
        ])
    func trailingComma(_ text: String, offset: Int) {
        for encoding: String.Encoding in [.utf8, .utf16LittleEndian] {
            let error = #expect(throws: JobError.self) {
                try JobDecoder().decode(Self.encoded(text, encoding), contentType: nil)
            }
            #expect(error?.code == "malformedMessage", "\(text)")
            #expect(error?.message.hasSuffix("a comma before a closing bracket at byte \(offset)") == true)
        }
    }

    @Test("commas in strings, and ordinary ones, are no trailing commas")
    func noTrailingComma() throws {
        #expect(JSONText.trailingCommaOffset(in: Array(#"{"a":",]","b":"\",}","c":[1,2]}"#.utf8)) == nil)
        let text = #"{"version":1,"id":"t","type":"echo","input":{"s":",}","e":"\",]"}}"#
        #expect(try JobDecoder().decode(Array(text.utf8), contentType: nil).input == ["s": ",}", "e": "\",]"])
    }

    @Test("a body that is not valid in the encoding its first bytes announce is a malformed message")
    func invalidUTF16() {
        let odd: [UInt8] = [0xFF, 0xFE, 0x7B]
        let error = #expect(throws: JobError.self) { try JobDecoder().decode(odd, contentType: nil) }
        #expect(error?.code == "malformedMessage" && error?.message.contains("UTF-16LE") == true)
    }

    @Test("a compressed body is refused by its content encoding; plain ones, as kombu labels them, are read")
    func contentEncoding() throws {
        let body = Array(Self.descriptor.utf8)
        for plain in ["", "identity", "UTF-8", "utf8"] {
            #expect(try JobDecoder().decode(body, contentType: nil, contentEncoding: plain).id == "job-1", "\(plain)")
        }
        let error = #expect(throws: JobError.self) {
            try JobDecoder().decode(body, contentType: "application/json", contentEncoding: "gzip")
        }
        #expect(error?.code == "unsupportedContentType" && error?.message.contains("'gzip'") == true)
    }

    @Test("a number no double can hold is an invalid descriptor, not invalid JSON")
    func hugeNumber() {
        let body = Array(#"{"version":1,"id":"big","type":"echo","input":1e400}"#.utf8)
        let error = #expect(throws: JobError.self) { try JobDecoder().decode(body, contentType: nil) }
        #expect(error?.code == "invalidDescriptor", "\(error?.message ?? "")")
        #expect(error?.message.contains("a number a double cannot hold") == true)
        for number in ["0e5", "1e-400"] {
            let body = Array(#"{"version":1,"id":"odd","type":"echo","input":{"n":\#(number)}}"#.utf8)
            let error = #expect(throws: JobError.self) { try JobDecoder().decode(body, contentType: nil) }
            #expect(error?.code == "invalidDescriptor")
            #expect(
                error?.message.contains("a number Foundation cannot read as a double") == true,
                "\(error?.message ?? "")")
        }
    }

    @Test("salvaged ids: the first id member, read past huge numbers, deep nesting, bad JSON and other encodings")
    func salvage() {
        func id(_ text: String, _ encoding: String.Encoding = .utf8) -> String? {
            JobDecoder.salvageID(from: Self.encoded(text, encoding))
        }
        #expect(id(#"{"version":1,"id":"first","id":"second"}"#) == "first")
        let claims = #"{"unique":true,"input":[1e400],"key":"k","id":"j","unique":false}"#
        #expect(
            JobDecoder.salvage(from: Array(claims.utf8))
                == SalvagedDescriptor(id: "j", type: nil, key: "k", sequence: nil, unique: true))
        let odd = #"{"sequence":-1,"type":7,"sequence":18446744073709551615,"type":"echo","key":null}"#
        #expect(
            JobDecoder.salvage(from: Array(odd.utf8))
                == SalvagedDescriptor(id: nil, type: nil, key: nil, sequence: nil, unique: nil),
            "the first of each member counts, even of the wrong type")
        let good = #"{"sequence":18446744073709551615,"type":"echo","key":"k","input":1e400}"#
        #expect(JobDecoder.salvage(from: Array(good.utf8)).sequence == UInt64.max)
        #expect(id(#"{"input":1e400,"id":"after-a-huge-number"}"#) == "after-a-huge-number")
        #expect(id(#"{"input":"} ] \" ,","nested":[{"id":"inner"}],"id":"outer"}"#) == "outer")
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(id(#"{"input":"# + deep + #","id":"deep"}"#) == "deep")
        #expect(id(#"{"id":"truncated", "input": [1, 2"#) == "truncated")
        #expect(id(#"{"version":1,"id":"wide"}"#, .utf16LittleEndian) == "wide")
        #expect(id(#"{"id":5}"#) == nil)
        #expect(id(#"["id","x"]"#) == nil)
        #expect(id(#"{"type":"echo"}"#) == nil)
        #expect(id("not json") == nil)
    }
}
