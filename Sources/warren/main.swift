import ArgumentParser
import WarrenCLI
import WarrenDashboard

/// `warren`: WarrenCLI's commands, and the dashboard, which WarrenCLI does not link (it would bring Hummingbird into
/// every user's worker executable).
struct Warren: ParsableCommand {
    static let configuration = WarrenCommand.configuration(adding: [DashboardCommand.self])

    func run() throws {
        try WarrenCommand().run()
    }
}

WarrenCommand.main(as: Warren.self)
