import Foundation
import Testing

extension Integration {
    @Suite struct ComposeFile {
        @Test("docker-compose.yml is valid for Debian's docker-compose and runs a broker and two workers")
        func validates() throws {
            let compose = URL(fileURLWithPath: "/usr/bin/docker-compose")
            try #require(FileManager.default.isExecutableFile(atPath: compose.path), "scripts/install-deps installs docker-compose")
            let file = TestEnvironment.packageRoot.appendingPathComponent("docker-compose.yml").path
            let check = try ChildProcess(compose, ["-f", file, "config"])
            #expect(check.waitForExit() == 0, "\(check.stderr)")
            let services = try ChildProcess(compose, ["-f", file, "config", "--services"])
            #expect(services.waitForExit() == 0)
            #expect(Set(services.stdout.split(separator: "\n").map(String.init)) == ["rabbitmq", "worker1", "worker2"])
            #expect(check.stdout.contains("WARREN_URL: amqp://guest:guest@rabbitmq:5672/%2F"))
        }
    }
}
