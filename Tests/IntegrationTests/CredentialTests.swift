import Foundation
import Testing

/// A password in the broker URL never reaches a log line or an error message: a worker's debug log, and what each
/// command prints when it works and when it fails.
extension Integration {
    @Suite struct Credentials {
        @Test("a password in the URL appears in no log and no error message")
        func passwordNeverPrinted() throws {
            let brokerURL = try TestEnvironment.brokerURL
            let user = TestEnvironment.uniqueName("cred-user")
            // Letters and digits, so that it reads the same percent-encoded; then characters a URL must encode.
            let secret = "Pw" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16)
            let password = "\(secret)/@:,x"
            let encoded = try #require(password.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            try Chaos.brokerCtl(["add_user", user, password])
            defer { try? Chaos.brokerCtl(["delete_user", user]) }
            try Chaos.brokerCtl(["set_permissions", "-p", "/", user, ".*", ".*", ".*"])
            let url = brokerURL.replacingOccurrences(of: "guest:guest@", with: "\(user):\(encoded)@")
            try #require(url.contains(encoded))
            let queue = TestEnvironment.uniqueName("cred")
            defer { BrokerProbe.delete(queue) }

            var printed: [(String, String)] = []
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary, ["worker", "--url", url, "--queue", queue, "--log-level", "debug"],
                name: "worker with a password")
            defer { worker.terminate() }
            try worker.waitForStderr(containing: "worker started")

            let succeeded = try CLI.run(["enqueue", "echo", "--url", url, "--queue", queue, "--input", "1", "--wait"])
            #expect(succeeded.status == 0, "\(succeeded.stderr)")
            let failed = try CLI.run([
                "enqueue", "fail", "--url", url, "--queue", queue, "--wait", "--input", #"{"message":"on purpose"}"#,
            ])
            #expect(failed.status == 3, "\(failed.stderr)")
            for output in [succeeded, failed] { printed.append(("enqueue", output.stdout + output.stderr)) }

            // Commands that fail, each with the password in its URL or in WARREN_URL.
            let port = try #require(URLComponents(string: brokerURL)?.port)
            let failing: [(String, [String], [String: String])] = [
                (
                    "unknown vhost", ["enqueue", "echo", "--url", url.replacingOccurrences(of: "/%2F", with: "/nope")],
                    [:]
                ),
                (
                    "nothing listening",
                    [
                        "worker", "--url", url.replacingOccurrences(of: ":\(port)/", with: ":1/"), "--wait-for-broker",
                        "1s",
                    ],
                    [:]
                ),
                ("bad port", ["results", "--url", url.replacingOccurrences(of: ":\(port)/", with: ":port/")], [:]),
                ("not amqp", ["cancel", "x", "--url", url.replacingOccurrences(of: "amqp://", with: "http://")], [:]),
                ("wrong password", ["status", "--url", url.replacingOccurrences(of: "x@", with: "y@")], [:]),
                (
                    "in WARREN_URL", ["enqueue", "echo"],
                    ["WARREN_URL": url.replacingOccurrences(of: "/%2F", with: "/nope")]
                ),
                ("a raw slash", ["enqueue", "echo", "--url", "amqp://\(user):\(secret)/x@localhost:\(port)/%2F"], [:]),
            ]
            for (name, arguments, environment) in failing {
                let output = try CLI.run(arguments, environment: environment)
                #expect(output.status != 0, "\(name): \(output.stdout)")
                #expect(!output.stderr.isEmpty, "\(name): no error message")
                printed.append((name, output.stdout + output.stderr))
            }

            worker.signal(SIGTERM)
            #expect(worker.waitForExit() == 0)
            #expect(worker.stderr.contains("job started"), "the worker logged at debug level")
            printed.append(("worker log", worker.stdout + worker.stderr))

            for (name, text) in printed {
                #expect(!text.contains(secret), "\(name) printed the password:\n\(text)")
            }
        }
    }
}
