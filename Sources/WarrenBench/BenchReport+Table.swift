import Foundation

/// The report as a table for people.
extension BenchReport {
    /// One line per figure: the medians of the raw client, the floor and Warren with their spread (min–max over the
    /// repetitions), Warren's ratios to the raw client and to the floor, and the target with ✓ or ✗. Without the
    /// floor, its two columns are left out.
    ///
    /// ```
    /// figure                         raw        floor       warren      warren/raw  warren/floor  target
    /// jobs/s at once, prefetch 10    9,120      7,990       7,801       0.86x       0.98x         ✓ ≥ 0.85x raw
    /// ```
    public func table() -> String {
        let hasFloor = figures.contains { $0.floor != nil }
        var header = ["figure", "raw", "floor", "warren", "warren/raw", "warren/floor", "target"]
        if !hasFloor { header.removeAll { $0.contains("floor") } }
        var rows = figures.map { figure -> [String] in
            var row = [figure.shortLabel, cell(figure.baseline, key: figure.key)]
            if hasFloor { row.append(figure.floor.map { cell($0, key: figure.key) } ?? "") }
            row += [cell(figure.warren, key: figure.key), Self.ratio(figure.ratio)]
            if hasFloor { row.append(figure.floorRatio.map(Self.ratio) ?? "") }
            row.append(figure.target.map { "\($0.isMet ? "✓" : "✗") \($0.goal)" } ?? "")
            return row
        }
        rows.insert(header, at: 0)
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        var lines = rows.map { row in
            row.indices.map { column in
                let text = row[column]
                let padding = String(repeating: " ", count: widths[column] - text.count)
                return column == 0 || column == row.count - 1 ? text + padding : padding + text
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        lines.insert(String(repeating: "-", count: widths.reduce(0, +) + 2 * (widths.count - 1)), at: 1)
        var notes = Set<String>()
        for figure in figures {
            if let note = figure.note, notes.insert(note).inserted { lines.append("cancellation, \(note)") }
        }
        lines.append("raw: the plain raw client. " + (hasFloor ? Self.floorLegend : "The floor was not measured."))
        lines.append(
            "\(options.repetitions) repetition\(options.repetitions == 1 ? "" : "s"): median (min–max); "
                + "ratios of medians; \(host.cores) cores; broker \(broker)")
        if !options.baselineVariants.isEmpty {
            let variants = options.baselineVariants.map(\.rawValue).sorted().joined(separator: ", ")
            lines.append("diagnostic run: the raw client copies Warren's \(variants); the floor does not change")
        }
        if host.compilerRunning { lines.append("warning: a Swift compiler ran during the run; figures are noisy") }
        return lines.joined(separator: "\n")
    }

    private static let floorLegend =
        "floor: the design's floor, the raw client with Warren's operation-queue hop and results stream."

    private static func ratio(_ value: Double) -> String {
        value.formatted(.number.precision(.fractionLength(2))) + "x"
    }

    private func cell(_ spread: Spread, key: String) -> String {
        let median = FigureCatalog.format(spread.median, key: key)
        guard spread.samples.count > 1 else { return median }
        return "\(median) (\(FigureCatalog.format(spread.min, key: key))–\(FigureCatalog.format(spread.max, key: key)))"
    }
}
