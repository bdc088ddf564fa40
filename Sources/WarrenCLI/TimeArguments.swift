import ArgumentParser
import Foundation
import Warren

/// A length of time on the command line: seconds, or a number with a unit (`90`, `250ms`, `30s`, `10m`, `2h`, `1d`).
///
/// Thread safety: immutable.
struct TimeSpan: ExpressibleByArgument, Equatable {
    let seconds: TimeInterval

    init(seconds: TimeInterval) {
        self.seconds = seconds
    }

    init?(argument: String) {
        guard let seconds = DurationText.seconds(argument) else { return nil }
        self.seconds = seconds
    }

    /// The span, to the millisecond.
    var duration: Duration { .milliseconds((seconds * 1000).rounded()) }

    /// As it would be written: `60s`, `250ms`.
    var defaultValueDescription: String {
        seconds.rounded() == seconds ? "\(Int(seconds))s" : "\(Int((seconds * 1000).rounded()))ms"
    }
}

/// An instant on the command line, in ISO 8601 (`2026-11-24T09:00:00Z`, `2026-11-24T10:00:00.5+01:00`).
///
/// Thread safety: immutable.
struct Instant: ExpressibleByArgument {
    let date: Date

    init?(argument: String) {
        let styles = [Date.ISO8601FormatStyle(includingFractionalSeconds: true), Date.ISO8601FormatStyle()]
        // A day or time that does not exist (2027-02-30, 24:30) is refused, not moved to another as Foundation would.
        guard WireCoding.namesExistingTime(argument),
            let date = styles.lazy.compactMap({ try? $0.parse(argument) }).first
        else { return nil }
        self.date = date
    }
}

/// An amount of memory on the command line: a number with a binary unit, `K`, `M` or `G` (also written `KiB`, `KB`,
/// `MiB`, `MB`, `GiB`, `GB`, any case): `512M`, `1.5GiB`. Each unit is 1,024 of the one below, as `ps` and `top`
/// count memory.
///
/// Thread safety: immutable.
struct MemorySize: ExpressibleByArgument, Equatable {
    let bytes: Int

    init?(argument: String) {
        let units: [String: Double] = ["k": 1024, "m": 1_048_576, "g": 1_073_741_824]
        let lowered = argument.lowercased()
        let digits = lowered.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        var unit = lowered.dropFirst(digits.count)
        if unit.hasSuffix("ib") { unit = unit.dropLast(2) } else if unit.hasSuffix("b") { unit = unit.dropLast() }
        guard let scale = units[String(unit)], let value = Double(digits), value.isFinite, value * scale < 1e18 else {
            return nil
        }
        bytes = Int((value * scale).rounded())
    }
}
