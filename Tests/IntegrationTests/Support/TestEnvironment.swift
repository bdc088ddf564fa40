import Foundation
import Testing

/// Where the private test broker and the built binaries are.
enum TestEnvironment {
    /// The private broker `scripts/test` started.
    static var brokerURL: String {
        get throws {
            guard let url = ProcessInfo.processInfo.environment["WARREN_TEST_URL"] else {
                Issue.record(
                    "WARREN_TEST_URL is not set: run the integration tests with scripts/test, which starts a private broker"
                )
                throw TestSetupError.noBroker
            }
            return url
        }
    }

    /// The directory of the broker `scripts/test` started, for `scripts/broker ctl`.
    static var brokerDirectory: String? {
        ProcessInfo.processInfo.environment["WARREN_BROKER_DIR"]
    }

    /// The package root, found from this file's path.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `warren` executable of this build.
    static var warrenBinary: URL {
        let candidates = [".build/debug/warren", ".build/release/warren"].map { packageRoot.appendingPathComponent($0) }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// A name no other test uses.
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// A private directory for sequence files and logs of one test.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("warren-test"))
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

enum TestSetupError: Error {
    case noBroker
}
