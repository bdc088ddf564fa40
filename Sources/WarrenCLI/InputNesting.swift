import Warren

/// How deeply a job input may nest for workers to take it, checked on the text the producer reads (`--input`, a
/// graph file) before it is parsed: Foundation's parser gives up past 512 levels, saying no more than "not JSON".
///
/// Thread safety: stateless.
enum InputNesting {
    /// Why no worker takes the input in `text`, whose inputs begin `levelsAbove` levels down (0 for `--input`; 3 in
    /// a graph file: the file, its `jobs`, the job): it nests deeper than ``JobDecoder/maxNestingDepths`` allows,
    /// the descriptor counting as level 1. `nil` if some worker takes it.
    static func problem(in text: [UInt8], levelsAbove: Int) -> String? {
        let limit = JobDecoder.maxNestingDepths.upperBound
        return beyond(limit, in: text, levelsAbove: levelsAbove).map { offset in
            "nests arrays and objects deeper than any worker takes (\(limit - 1) levels, with --max-nesting-depth "
                + "\(limit)): at byte \(offset)"
        }
    }

    /// A warning when the input in `text` nests deeper than a worker takes by default.
    static func warning(in text: [UInt8], levelsAbove: Int) -> String? {
        let limit = JobDecoder().maxNestingDepth
        guard beyond(limit, in: text, levelsAbove: levelsAbove) != nil else { return nil }
        return "nests arrays and objects deeper than \(limit - 1) levels: a worker dead-letters the job unless started "
            + "with a larger --max-nesting-depth (default \(limit), the descriptor counting as level 1)"
    }

    /// Where `text` nests deeper than an input may under a worker's `limit`.
    private static func beyond(_ limit: Int, in text: [UInt8], levelsAbove: Int) -> Int? {
        text.withUnsafeBytes { JSONNesting.offsetBeyond(limit: levelsAbove + limit - 1, in: $0) }
    }
}
