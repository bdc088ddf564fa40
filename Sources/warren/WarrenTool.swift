import ArgumentParser
import WarrenBenchCLI
import WarrenCLI

/// `warren`: the library's commands (``WarrenCLI/WarrenCommand``), and `warren bench`.
struct WarrenTool: ParsableCommand {
    static let configuration = WarrenCommand.configuration(adding: [BenchCommand.self])

    func run() throws {
        try WarrenCommand().run()
    }
}
