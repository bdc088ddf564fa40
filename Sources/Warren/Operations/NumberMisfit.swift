/// Finds the number of an input that does not fit its field's type (a fraction for an `Int`, 300 for a `UInt8`).
///
/// Foundation's `JSONDecoder` on Linux reports such a number as "the given data was not valid JSON", with no coding
/// path, though the input is valid JSON. Only a failing input pays for this second look: each number that could
/// misfit some numeric type is decoded alone, every other such number set to 0 (which fits any numeric type); the
/// first in turn that still fails alone is the one.
///
/// Thread safety: stateless.
enum NumberMisfit {
    /// How many decodings the search may try; an input with more numbers that could misfit is reported without a
    /// path.
    static let maxProbes = 64

    /// What is wrong with the number of `input` that `type` cannot take, with its path where it can be found
    /// (`input.numbers[1]: 2.5 is not a whole number, and the field takes integers`); `nil` when decoding failed
    /// for another reason.
    static func explanation<T: Decodable>(decoding type: T.Type, from input: JSONValue) -> String? {
        guard isNumberMisfit(decoding: type, from: input) else { return nil }
        return located(decoding: type, from: input)
            ?? "input: a number does not fit its field's type (a fraction for an integer, or out of range)"
    }

    private static func located<T: Decodable>(decoding type: T.Type, from input: JSONValue) -> String? {
        var candidates: [[JSONPathKey]] = []
        collect(input, at: [], into: &candidates)
        guard candidates.count <= maxProbes else { return nil }
        for path in candidates {
            let alone = candidates.reduce(input) { value, other in
                other == path ? value : value.replacing(at: other[...], with: .number(0))
            }
            guard isNumberMisfit(decoding: type, from: alone), let number = input.value(at: path[...]) else {
                continue
            }
            return "\(DecodingError.inputPath(path)): \(describe(number))"
        }
        return nil
    }

    /// Whether decoding `input` as `type` fails the way a misfit number does: corrupt data at no coding path,
    /// described as Foundation describes a misfit number (not as the type's own code may describe its input).
    static func isNumberMisfit<T: Decodable>(decoding type: T.Type, from input: JSONValue) -> Bool {
        do {
            _ = try input.decode(as: type)
            return false
        } catch let DecodingError.dataCorrupted(context) {
            return context.codingPath.isEmpty && context.debugDescription == misfitDescription
        } catch {
            return false
        }
    }

    /// How this Foundation describes a number that does not fit its field, asked of it rather than assumed.
    private static let misfitDescription: String? = {
        do {
            _ = try JSONValue.number(0.5).decode(as: Int.self)
        } catch let DecodingError.dataCorrupted(context) {
            return context.debugDescription
        } catch {}
        return nil
    }()

    /// Appends the path of every number in `value` that some numeric type cannot take: all but the whole numbers
    /// from 0 to 127.
    private static func collect(_ value: JSONValue, at path: [JSONPathKey], into candidates: inout [[JSONPathKey]]) {
        switch value {
        case .number(let number) where number.rounded() == number && (0...127).contains(number):
            break
        case .number, .integer:
            candidates.append(path)
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                collect(element, at: path + [.index(index)], into: &candidates)
            }
        case .object(let members):
            for key in members.keys.sorted() { collect(members[key]!, at: path + [.key(key)], into: &candidates) }
        case .null, .bool, .string:
            break
        }
    }

    private static func describe(_ number: JSONValue) -> String {
        switch number {
        case .number(let value) where value.rounded() != value && abs(value) <= Double(Float.greatestFiniteMagnitude):
            return "\(value) is not a whole number, and the field takes integers"
        case .number(let value) where value.rounded() == value && abs(value) < 1e18:
            return "\(Int64(value)) is out of range for the field's number type"
        case .number(let value):
            return "\(value) is out of range for the field's number type"
        case .integer(let value):
            return "\(value) is out of range for the field's number type"
        default:
            return "\(number) does not fit the field's type"
        }
    }
}

/// One step of a path into a JSON value: an object's member or an array's element.
///
/// Thread safety: immutable.
enum JSONPathKey: Equatable, CodingKey {
    case key(String)
    case index(Int)

    var stringValue: String {
        switch self {
        case .key(let key): key
        case .index(let index): "\(index)"
        }
    }

    var intValue: Int? {
        if case .index(let index) = self { return index }
        return nil
    }

    init(stringValue: String) { self = .key(stringValue) }
    init(intValue: Int) { self = .index(intValue) }
}

extension JSONValue {
    /// The value at `path`, if there is one.
    fileprivate func value(at path: ArraySlice<JSONPathKey>) -> JSONValue? {
        guard let first = path.first else { return self }
        switch (self, first) {
        case (.object(let members), .key(let key)): return members[key]?.value(at: path.dropFirst())
        case (.array(let elements), .index(let index)) where elements.indices.contains(index):
            return elements[index].value(at: path.dropFirst())
        default: return nil
        }
    }

    /// This value with the value at `path` replaced by `replacement`; unchanged when there is none.
    fileprivate func replacing(at path: ArraySlice<JSONPathKey>, with replacement: JSONValue) -> JSONValue {
        guard let first = path.first else { return replacement }
        switch (self, first) {
        case (.object(var members), .key(let key)):
            guard let member = members[key] else { return self }
            members[key] = member.replacing(at: path.dropFirst(), with: replacement)
            return .object(members)
        case (.array(var elements), .index(let index)) where elements.indices.contains(index):
            elements[index] = elements[index].replacing(at: path.dropFirst(), with: replacement)
            return .array(elements)
        default:
            return self
        }
    }
}
