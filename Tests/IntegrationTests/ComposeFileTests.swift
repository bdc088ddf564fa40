import Foundation
import Testing

extension Integration {
    @Suite struct ComposeFile {
        static let compose = URL(fileURLWithPath: "/usr/bin/docker-compose")

        /// `docker-compose config` of the repository's compose file: the file as Compose reads it, paths resolved.
        static func config() throws -> String {
            try #require(
                FileManager.default.isExecutableFile(atPath: compose.path),
                "scripts/install-deps installs docker-compose")
            let file = TestEnvironment.packageRoot.appendingPathComponent("docker-compose.yml").path
            let check = try ChildProcess(compose, ["-f", file, "config"])
            #expect(check.waitForExit() == 0, "\(check.stderr)")
            return check.stdout
        }

        @Test(
            "docker-compose.yml is valid for Debian's docker-compose and runs the broker, workers, Prometheus, Alertmanager, Grafana"
        )
        func validates() throws {
            let file = TestEnvironment.packageRoot.appendingPathComponent("docker-compose.yml").path
            let services = try ChildProcess(Self.compose, ["-f", file, "config", "--services"])
            #expect(services.waitForExit() == 0)
            #expect(
                Set(services.stdout.split(separator: "\n").map(String.init))
                    == ["rabbitmq", "worker", "prometheus", "alertmanager", "grafana", "warren"])
            let config = try Self.config()
            #expect(config.contains("WARREN_URL: amqp://guest:guest@rabbitmq:5672/%2F"))
            // The broker keeps its data across `down` and `up`: a named volume, and a fixed host name (its node name).
            #expect(config.contains("hostname: rabbitmq\n"))
            #expect(config.contains("- rabbitmq-data:/var/lib/rabbitmq:rw"))
            #expect(config.contains("image: rabbitmq:4-management"), "a maintained RabbitMQ line")
            // Prometheus reaches the workers' metrics: they listen beyond the container's loopback.
            #expect(config.contains("WARREN_METRICS_HOST: 0.0.0.0"))
            #expect(config.contains("WARREN_METRICS_PORT: '9464'"))
            // Every file the stack mounts from the repository is there.
            let root = TestEnvironment.packageRoot.path
            let mounted = config.split(separator: "\n").compactMap { line -> String? in
                guard let match = line.firstMatch(of: /^\s+- (\/[^:]+):/) else { return nil }
                return String(match.1)
            }
            #expect(
                Set(mounted)
                    == Set(
                        [
                            "deploy/warren/schedules.json", "deploy/prometheus", "deploy/alertmanager",
                            "deploy/grafana/provisioning", "deploy/grafana/dashboards",
                        ].map { "\(root)/\($0)" }))
            for path in mounted {
                #expect(FileManager.default.fileExists(atPath: path), "\(path)")
            }
        }

        @Test("the Dockerfile builds from the sources it copies, and the image runs as a user without privileges")
        func dockerfile() throws {
            let text = try String(
                contentsOf: TestEnvironment.packageRoot.appendingPathComponent("Dockerfile"), encoding: .utf8)
            let copied = text.split(separator: "\n").compactMap { line -> String? in
                guard let match = line.firstMatch(of: #/^COPY ([A-Za-z.*]+) /#) else { return nil }
                return String(match.1)
            }
            #expect(copied == ["Package.*", "Sources", "Tests"])
            for path in ["Package.swift", "Sources", "Tests"] {
                #expect(
                    FileManager.default.fileExists(
                        atPath: TestEnvironment.packageRoot.appendingPathComponent(path).path))
            }
            let ignored = try String(
                contentsOf: TestEnvironment.packageRoot.appendingPathComponent(".dockerignore"), encoding: .utf8)
            #expect(!ignored.split(separator: "\n").contains { ["Sources", "Tests", "Package.swift"].contains($0) })
            let user = try #require(text.firstMatch(of: /\nUSER (\d+):(\d+)\n/))
            #expect(Int(user.1) != 0 && Int(user.2) != 0, "not root")
            #expect(text.contains("ENTRYPOINT [\"warren\"]"))
        }
    }
}
