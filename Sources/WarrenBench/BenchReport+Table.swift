import Foundation

/// The report as a table for people.
extension BenchReport {
    /// One line per figure: the baseline's and Warren's medians with their spread (min–max over the repetitions),
    /// Warren's ratio to the baseline, and the target with ✓ or ✗.
    public func table() -> String {
        let header = ["figure", "baseline", "warren", "ratio", "target"]
        var rows = figures.map { figure -> [String] in
            [
                "\(figure.label) (\(figure.unit))", cell(figure.baseline, key: figure.key),
                cell(figure.warren, key: figure.key), figure.ratio.formatted(.number.precision(.fractionLength(2))),
                figure.target.map { "\($0.isMet ? "✓" : "✗") \($0.goal)" } ?? "",
            ]
        }
        rows.insert(header, at: 0)
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        var lines = rows.map { row in
            row.indices.map { column in
                let text = row[column]
                let padding = String(repeating: " ", count: widths[column] - text.count)
                return column == 0 || column == 4 ? text + padding : padding + text
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        lines.insert(String(repeating: "-", count: widths.reduce(0, +) + 2 * (widths.count - 1)), at: 1)
        var notes = Set<String>()
        for figure in figures {
            if let note = figure.note, notes.insert(note).inserted { lines.append("cancellation \(note)") }
        }
        lines.append(
            "\(options.repetitions) repetition\(options.repetitions == 1 ? "" : "s"): median (min–max); "
                + "ratio = Warren median / baseline median; \(host.cores) cores; broker \(broker)")
        if !options.baselineVariants.isEmpty {
            let variants = options.baselineVariants.map(\.rawValue).sorted().joined(separator: ", ")
            lines.append("diagnostic run: the baseline copies Warren's \(variants)")
        }
        if host.compilerRunning { lines.append("warning: a Swift compiler ran during the run; figures are noisy") }
        return lines.joined(separator: "\n")
    }

    private func cell(_ spread: Spread, key: String) -> String {
        let median = FigureCatalog.format(spread.median, key: key)
        guard spread.samples.count > 1 else { return median }
        return "\(median) (\(FigureCatalog.format(spread.min, key: key))–\(FigureCatalog.format(spread.max, key: key)))"
    }
}
