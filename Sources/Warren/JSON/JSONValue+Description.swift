/// JSON text, so that printing an input or an output shows what the wire carries: `{"sum":6}`, not the enum's cases.
extension JSONValue: CustomStringConvertible {
    /// The value as compact JSON, members sorted as the wire writes them; a number JSON cannot hold (a `.number`
    /// made by hand from NaN or an infinity) as Swift writes it (`nan`, `inf`).
    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .number(let number): number.isFinite ? JSONWriter.text(of: number) : "\(number)"
        case .integer(let integer): String(integer)
        case .string(let text): Self.quoted(text)
        case .array(let elements): "[" + elements.map(\.description).joined(separator: ",") + "]"
        case .object(let members):
            "{"
                + members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .map { Self.quoted($0.key) + ":" + $0.value.description }.joined(separator: ",") + "}"
        }
    }

    /// `text` as a JSON string, escaped as the wire escapes it.
    private static func quoted(_ text: String) -> String {
        String(decoding: JSONWriter.bytes(reserving: text.utf8.count + 2) { $0.string(text) } ?? [], as: UTF8.self)
    }
}
