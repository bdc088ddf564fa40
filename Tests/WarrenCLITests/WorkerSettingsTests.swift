import ArgumentParser
import Foundation
import Testing

@testable import WarrenCLI

@Suite("warren worker settings from the environment and a file")
struct WorkerSettingsTests {
    /// `arguments` parsed, then validated with `environment`, and a settings file holding `file` if given.
    private func options(
        _ arguments: [String] = [], environment: [String: String] = [:], file: String? = nil
    ) throws -> WorkerOptions {
        var environment = environment
        if let file {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("warren-\(UUID()).env").path
            try file.write(toFile: path, atomically: true, encoding: .utf8)
            environment[WorkerSettings.fileVariable] = path
        }
        var options = try WorkerOptions.parse(arguments)
        try options.validate(environment: environment)
        return options
    }

    @Test func aFlagBeatsTheEnvironmentWhichBeatsTheFile() throws {
        let file = """
            # worker settings
            WARREN_WIDTH=2
            WARREN_PREFETCH = 9
            WARREN_QUEUE="from-file"
            WARREN_GRACE='12'

            WARREN_MAX_MEMORY=1G
            """
        let environment = ["WARREN_WIDTH": "3", "WARREN_QUEUE": "a, b", "WARREN_GRACE": ""]
        let configuration = try options(["--prefetch", "5"], environment: environment, file: file).configuration()
        #expect(configuration.localQueues["default"] == 3, "the environment beats the file")
        #expect(configuration.prefetch == 5, "a flag beats both")
        #expect(configuration.queues == ["a", "b"], "a list replaces the file's whole list")
        #expect(configuration.shutdownGracePeriod == .seconds(12), "an empty variable is unset; quotes are dropped")
        #expect(configuration.maxResidentMemory == 1 << 30)
    }

    @Test func flagsTakeTrueOrFalseAndTheirNegationBeatsTheEnvironment() throws {
        #expect(try options(environment: ["WARREN_PRIORITY_QUEUES": "true"]).configuration().priorityQueues)
        let negated = try options(["--no-priority-queues"], environment: ["WARREN_PRIORITY_QUEUES": "TRUE"])
        #expect(try !negated.configuration().priorityQueues)
        let error = #expect(throws: ValidationError.self) {
            try options(environment: ["WARREN_QUORUM_QUEUES": "yes"])
        }
        #expect(error?.message == "WARREN_QUORUM_QUEUES in the environment: 'yes' is neither true nor false")
    }

    @Test func everyOptionButConfigHasASettingThatReachesIt() throws {
        let help = WorkerOptions.helpMessage(columns: 10_000)
        let named = Set(help.matches(of: /--([a-z][a-z-]*)/).map { String($0.1) })
        let options = named.subtracting(["help", "version", "config"]).filter { !$0.hasPrefix("no-") }
        #expect(options == WorkerSettings.options)
        let file = WorkerSettings.options.sorted().map { option -> String in
            let value: String
            switch option {
            case "priority-queues", "quorum-queues": value = "false"
            case "local-queue": value = "io=2"
            case "assign": value = "echo=io"
            case "rate-limit", "fleet-rate-limit": value = "echo=5/s"
            case "time-limit": value = "echo=30s"
            case "max-memory": value = "512M"
            case "wait-for-broker": value = "5s"
            case "log-level": value = "debug"
            case "log-format": value = "json"
            case "url": value = "amqp://localhost"
            case "queue", "worker-id", "schedule", "metrics-host": value = "x"
            default: value = "7"
            }
            return "\(WorkerSettings.variable(for: option))=\(value)"
        }
        let settings = try WorkerSettings(environment: [:], fileText: file.joined(separator: "\n"), path: "all.env")
        var parsed = try WorkerOptions.parse([])
        #expect(try parsed.apply(settings) == WorkerSettings.options)
    }

    @Test(arguments: [
        ("WARREN_WIDTH 8", "--config f.env, line 2: expected NAME=value, e.g. WARREN_WIDTH=8"),
        (
            "WARREN_WIDHT=8",
            "--config f.env, line 2: WARREN_WIDHT: no setting of warren worker: the names are WARREN_ and an option's "
                + "name, as WARREN_MAX_MEMORY"
        ),
        ("WARREN_CONFIG=other.env", "--config f.env, line 2: WARREN_CONFIG: a settings file cannot name another"),
        ("WARREN_QUEUE=b", "--config f.env, line 2: WARREN_QUEUE is set on line 1 already"),
    ])
    func aFileThatBreaksTheFormatIsRefusedByLine(_ line: String, _ message: String) {
        let error = #expect(throws: ValidationError.self) {
            try WorkerSettings(environment: [:], fileText: "WARREN_QUEUE=a\n\(line)\n", path: "f.env")
        }
        #expect(error?.message == message)
    }

    @Test func badValuesNameTheirSetting() throws {
        let width = #expect(throws: ValidationError.self) {
            try options(file: "WARREN_WIDTH=eight")
        }
        #expect(width?.message.hasSuffix(", line 1: 'eight' is not a valid value for --width") == true)
        #expect(width?.message.hasPrefix("WARREN_WIDTH in /") == true)
        let rate = #expect(throws: ValidationError.self) {
            try options(environment: ["WARREN_RATE_LIMIT": "echo=5/s,email"])
        }
        #expect(rate?.message == "WARREN_RATE_LIMIT in the environment: --rate-limit email: expected type=N/unit")
        let empty = #expect(throws: ValidationError.self) {
            try options(environment: ["WARREN_QUEUE": "a,,b"])
        }
        #expect(empty?.message == "WARREN_QUEUE in the environment: 'a,,b' has an empty entry (a comma too many?)")
        // A host on the command line, its port in the settings: checked once both are in.
        #expect(throws: (any Error).self) { try WorkerOptions.parse(["--metrics-host", "0.0.0.0"]) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("warren-\(UUID()).env").path
        try "WARREN_METRICS_PORT=9464\n".write(toFile: path, atomically: true, encoding: .utf8)
        let both = try WorkerOptions.parse(["--metrics-host", "0.0.0.0", "--config", path])
        #expect(both.metrics.metricsPort == 9464)
        let missing = #expect(throws: ValidationError.self) {
            try options(environment: ["WARREN_CONFIG": "/no/such/file.env"])
        }
        #expect(missing?.message.hasPrefix("WARREN_CONFIG=/no/such/file.env: cannot read it: ") == true)
    }
}
