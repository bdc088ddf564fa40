import Foundation
import Testing

extension Integration {
    /// `scripts/peers`, the measurement beside Celery and Dramatiq: its help and its argument errors, which come
    /// before it installs, builds or starts anything. The measurement itself is not part of the tests.
    @Suite struct PeersScript {
        static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/peers")

        @Test("scripts/peers --help names every option and exits 0")
        func help() throws {
            let run = try ChildProcess(Self.script, ["--help"])
            #expect(run.waitForExit() == 0, "\(run.stderr)")
            for option in [
                "--jobs", "--round-trips", "--cancellations", "--repetitions", "--sides", "--warren", "--json",
                "--quick",
            ] {
                #expect(run.stdout.contains(option), "\(option)")
            }
        }

        @Test(
            "scripts/peers refuses bad arguments with exit 64 and says which",
            arguments: [
                (["--jobs", "0"], "argument --jobs: must be at least 1 (got 0)"),
                (["--round-trips", "many"], "argument --round-trips: not a whole number: 'many'"),
                (["--sides", "celery,resque"], "unknown side 'resque': choose from celery, dramatiq, warren"),
                (["--warren", "/nonexistent/warren"], "--warren: no executable at /nonexistent/warren"),
                (["extra"], "unrecognized arguments: extra"),
            ])
        func badArguments(arguments: [String], message: String) throws {
            let run = try ChildProcess(Self.script, arguments)
            #expect(run.waitForExit() == 64)
            #expect(run.stderr.contains(message), "\(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
    }
}
