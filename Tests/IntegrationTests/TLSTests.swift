import Foundation
import Testing

/// `amqps://` against a broker of the test's own, started with `scripts/broker start --tls`: a self-signed CA and a
/// server certificate for localhost, trusted through the URL's `cacertfile`.
extension Integration {
    @Suite struct TLS {
        static let brokerScript = TestEnvironment.packageRoot.appendingPathComponent("scripts/broker")

        /// Runs a tool to completion and expects it to succeed.
        static func run(_ executable: URL, _ arguments: [String]) throws {
            let child = try ChildProcess(executable, arguments)
            #expect(child.waitForExit(timeout: .seconds(120)) == 0, "\(executable.lastPathComponent): \(child.stderr)")
        }

        /// A CA nobody signed the broker's certificate with.
        static func strangerCA(in directory: URL) throws -> String {
            let path = directory.appendingPathComponent("stranger-ca.pem").path
            try run(
                URL(fileURLWithPath: "/usr/bin/openssl"),
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                    "-subj", "/CN=Stranger CA", "-keyout", directory.appendingPathComponent("stranger.key").path,
                    "-out", path,
                ])
            return path
        }

        @Test("a worker and warren enqueue --wait work over amqps://; a wrong CA fails with one clear line")
        func tls() throws {
            let directory = try TestEnvironment.temporaryDirectory()
            let brokerDirectory = directory.appendingPathComponent("broker").path
            try Self.run(Self.brokerScript, ["start", "--tls", brokerDirectory])
            defer { try? Self.run(Self.brokerScript, ["stop", brokerDirectory]) }
            let tlsURL = try String(contentsOfFile: brokerDirectory + "/tls-url", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(tlsURL.hasPrefix("amqps://guest:guest@localhost:"))
            let caPath = brokerDirectory + "/ca.pem"
            let url = "\(tlsURL)?cacertfile=\(caPath)"

            let queue = TestEnvironment.uniqueName("tls")
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary, ["worker", "--url", url, "--queue", queue, "--log-level", "debug"],
                name: "TLS worker")
            defer { worker.terminate() }
            try worker.waitForStderr(containing: "worker started")
            #expect(worker.stderr.contains("amqps://guest:***@localhost:"), "\(worker.stderr)")

            let enqueue = try CLI.run([
                "enqueue", "echo", "--url", url, "--queue", queue, "--input", #""over TLS""#, "--wait",
            ])
            #expect(enqueue.status == 0, "\(enqueue.stderr)")
            #expect(enqueue.stdout.contains("succeeded"), "\(enqueue.stdout)")
            #expect(enqueue.stdout.contains(#"output="over TLS""#), "\(enqueue.stdout)")

            let stranger = try Self.strangerCA(in: directory)
            let wrongCA = try CLI.run([
                "enqueue", "echo", "--url", "\(tlsURL)?cacertfile=\(stranger)", "--queue", queue,
            ])
            #expect(wrongCA.status == 1)
            #expect(wrongCA.stderr.contains("not signed by a trusted CA (cacertfile)"), "\(wrongCA.stderr)")
            #expect(wrongCA.stderr.split(separator: "\n").count == 1, "\(wrongCA.stderr)")

            let missingCA = try CLI.run(["worker", "--url", "\(tlsURL)?cacertfile=\(directory.path)/none.pem"])
            #expect(missingCA.status == 1)
            #expect(missingCA.stderr.contains("cannot read CA certificate file"), "\(missingCA.stderr)")
            #expect(missingCA.stderr.split(separator: "\n").count == 1, "\(missingCA.stderr)")

            #expect(worker.process.isRunning)
        }
    }
}
