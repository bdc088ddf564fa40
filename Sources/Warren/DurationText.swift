/// A length of time as people write it on the command line and in schedule files: seconds, or a number with a unit
/// (`90`, `0.25`, `250ms`, `30s`, `10m`, `2h`, `1d`).
///
/// Thread safety: stateless.
package enum DurationText {
    /// The seconds `text` stands for; `nil` unless it is digits with an optional fraction, then an optional unit: no
    /// sign, exponent or hexadecimal, which `Double` would also read (`0x10`, `1e1`, `+5s`).
    package static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var number = Substring(text)
        var unit: Double = 1
        if text.hasSuffix("ms") {
            number = number.dropLast(2)
            unit = 0.001
        } else if let last = text.last, let scale = units[last] {
            number = number.dropLast()
            unit = scale
        }
        guard number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let value = Double(number),
            value.isFinite
        else { return nil }
        return value * unit
    }
}
