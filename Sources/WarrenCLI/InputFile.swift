import Foundation

/// Files the CLI reads whole (a graph, an input, a list of ids).
enum InputFile {
    /// The bytes of the file at `path`, read as a stream rather than by its size, so that /dev/stdin and pipes,
    /// which have none, are read too; `nil` when it cannot be read.
    static func contents(of path: String) -> Data? {
        try? FileHandle(forReadingFrom: URL(fileURLWithPath: path)).readToEnd() ?? Data()
    }
}
