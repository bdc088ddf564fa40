import Foundation

/// The fields of a query string or an `application/x-www-form-urlencoded` body, in order; a name may repeat (the
/// dead letters ticked).
///
/// Thread safety: immutable (a value).
struct FormData: Sendable {
    let fields: [(name: String, value: String)]

    init(_ text: String) {
        fields = text.split(separator: "&", omittingEmptySubsequences: true).compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]) else { return nil }
            let value = parts.count > 1 ? Self.decode(parts[1]) : ""
            return value.map { (name, $0) }
        }
    }

    /// The first value of `name`.
    subscript(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// Every value of `name`.
    func all(_ name: String) -> [String] {
        fields.filter { $0.name == name }.map(\.value)
    }

    /// The fields by name, the first value of each.
    var first: [String: String] {
        var byName: [String: String] = [:]
        for (name, value) in fields where byName[name] == nil { byName[name] = value }
        return byName
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
