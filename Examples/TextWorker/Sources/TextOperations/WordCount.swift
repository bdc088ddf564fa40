import Warren

/// The `wordcount` operation: counts the words, lines and characters of a text, as `wc` does.
///
/// The definition is shared: the worker registers code for it, producers enqueue it.
/// Blocking: counting is CPU work, so it runs on a thread of its local queue (`cpu`), whose width bounds how many
/// counts run at once. It looks at `job.isCancelled` before each line and stops as soon as the job is cancelled.
public enum WordCount: OperationDefinition {
    /// The operation type name producers use.
    public static let type = "wordcount"

    /// The job's input: `{"text": "..."}`.
    public struct Input: Codable, Sendable {
        public var text: String

        public init(text: String) { self.text = text }
    }

    /// The job's output: `{"words": 3, "lines": 2, "characters": 5}`.
    public struct Output: Codable, Sendable, Equatable {
        /// Runs of non-whitespace characters.
        public var words: Int
        /// Lines; a final line break ends the last line rather than starting an empty one.
        public var lines: Int
        /// Characters as a person counts them (grapheme clusters), line breaks included.
        public var characters: Int

        public init(words: Int, lines: Int, characters: Int) {
            self.words = words
            self.lines = lines
            self.characters = characters
        }
    }

    /// Counts `input.text`.
    /// - Throws: `CancellationError` when the job is cancelled before the count is done.
    @Sendable public static func run(_ input: Input, job: JobContext) throws -> Output {
        var lines = input.text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        if lines.last?.isEmpty == true { lines.removeLast() }
        var words = 0
        for line in lines {
            if job.isCancelled { throw CancellationError() }
            words += line.split(whereSeparator: \.isWhitespace).count
        }
        return Output(words: words, lines: lines.count, characters: input.text.count)
    }
}
