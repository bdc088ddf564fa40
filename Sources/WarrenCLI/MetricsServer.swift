import Dispatch
import FlyingFox
import FlyingSocks
import Foundation
import Logging
import Prometheus
import Synchronization
import Warren

/// The worker's Prometheus endpoint (`--metrics-port`): `GET /metrics` answers with the exposition text of the
/// registry behind swift-metrics in this process.
///
/// Thread safety: immutable; the HTTP server is an actor that runs in a task of its own, the registry is locked.
final class MetricsServer: Sendable {
    /// The port it listens on: the one asked for, or the one the system picked for port 0.
    let port: UInt16
    let host: String
    private let serving: Task<Void, Never>

    private init(host: String, port: UInt16, serving: Task<Void, Never>) {
        self.host = host
        self.port = port
        self.serving = serving
    }

    /// Bootstraps swift-metrics with Prometheus (once per process), listens on `host:port`, and logs
    /// "metrics endpoint listening" with the bound port. Returns once it listens.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) when it cannot listen there (a bad address, a port in use).
    static func start(host: String, port: UInt16, logger: Logger) throws -> MetricsServer {
        let registry = MetricsSetup.bootstrap()
        let address: sockaddr_in
        do {
            address = try .inet(ip4: host, port: port)
        } catch {
            throw WarrenError(.invalidConfiguration, "--metrics-host \(host): not an IPv4 address")
        }
        let server = HTTPServer(address: address, timeout: 10, logger: DisabledLogger.disabled)
        let startup = Startup()
        let serving = Task {
            await server.appendRoute("GET /metrics") { _ in
                WorkerMetrics.sampleLocalQueues()
                var text: [UInt8] = []
                registry.emit(into: &text)
                return HTTPResponse(
                    statusCode: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                    body: Data(text))
            }
            let listening = Task {
                do {
                    try await server.waitUntilListening(timeout: 10)
                    guard case .ip4(_, let port) = await server.listeningAddress else {
                        throw WarrenError(.invalidConfiguration, "the metrics endpoint has no IPv4 address")
                    }
                    startup.report(.success(port))
                } catch {
                    startup.report(.failure(error))
                }
            }
            do {
                try await server.run()
            } catch {
                startup.report(.failure(error))
            }
            listening.cancel()
        }
        switch startup.wait() {
        case .success(let port):
            logger.info("metrics endpoint listening", metadata: ["host": "\(host)", "port": "\(port)"])
            return MetricsServer(host: host, port: port, serving: serving)
        case .failure(let error):
            serving.cancel()
            throw WarrenError(.invalidConfiguration, "cannot serve metrics on \(host):\(port): \(error)")
        }
    }

    /// Stops listening.
    func stop() {
        serving.cancel()
    }

    /// How starting went: the first report wins, the thread that started the server waits for it.
    ///
    /// Thread safety: locked.
    private final class Startup: Sendable {
        private let outcome = Mutex<Result<UInt16, any Error>?>(nil)
        private let ready = DispatchSemaphore(value: 0)

        func report(_ result: Result<UInt16, any Error>) {
            let first = outcome.withLock { outcome in
                guard outcome == nil else { return false }
                outcome = result
                return true
            }
            if first { ready.signal() }
        }

        func wait() -> Result<UInt16, any Error> {
            ready.wait()
            return outcome.withLock { $0! }
        }
    }
}
