import ArgumentParser
import WarrenBenchCLI
import WarrenCLI
import WarrenDashboard

/// `warren`: the library's commands (``WarrenCLI/WarrenCommand``), `warren bench` and `warren dashboard`, which
/// WarrenCLI does not link: they would bring the benchmark and Hummingbird into every user's worker executable.
struct WarrenTool: ParsableCommand {
    static let configuration = WarrenCommand.configuration(adding: [BenchCommand.self, DashboardCommand.self])

    func run() throws {
        try WarrenCommand().run()
    }
}
