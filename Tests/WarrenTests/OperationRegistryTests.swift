import Foundation
import Testing

@testable import Warren

/// An input whose fields are all optional: no input at all means "all defaults".
private struct Options: Codable, Sendable {
    var label: String?
    var count: Int?
}

private struct Point: Codable, Sendable, Equatable {
    var x: Int
    var y: Int
}

private struct Colour: Codable, Sendable {
    struct Channel: Codable, Sendable { var value: UInt8 }
    var alpha: Double
    var channels: [Channel]
    var weight: Int
}

/// A number whose own check fails at the top of the input, as a number that does not fit would.
private struct Even: Codable, Sendable {
    var value: Int

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        value = try container.decode(Int.self)
        guard value % 2 == 1 else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(value) is not odd")
        }
    }
}

@Suite("OperationRegistry")
struct OperationRegistryTests {
    /// Runs the code registered for `type` directly on `input`, as `JobOperation` would, without a queue.
    private func run(_ type: String, in registry: OperationRegistry, input: JSONValue) async throws -> JSONValue {
        let body = try #require(registry[type]?.body)
        let job = JobContext(
            descriptor: TestJobs.descriptor(type: type, input: input), attempt: 1, logger: TestJobs.logger)
        switch body {
        case .blocking(let code): return try code(input, job)
        case .asynchronous(let code): return try await code(input, job)
        }
    }

    @Test func decodesTypedInputAndEncodesTypedOutput() async throws {
        var registry = OperationRegistry()
        registry.register("mirror", blocking: { (point: Point, _: JobContext) in Point(x: point.y, y: point.x) })
        let output = try await run("mirror", in: registry, input: .parse(#"{"x": 1, "y": 2}"#))
        #expect(try output.decode(as: Point.self) == Point(x: 2, y: 1))
        #expect(output == .object(["x": .number(2), "y": .number(1)]))
    }

    @Test func asynchronousCodeDecodesAndEncodesToo() async throws {
        var registry = OperationRegistry()
        registry.register("double", asynchronous: { (numbers: [Int], _: JobContext) async in numbers.map { $0 * 2 } })
        #expect(try await run("double", in: registry, input: .parse("[1, 2, 3]")) == .parse("[2, 4, 6]"))
    }

    @Test func jsonValueInputAndOutputPassThroughUntouched() async throws {
        var registry = OperationRegistry()
        registry.register("echo", blocking: { (input: JSONValue, _: JobContext) in input })
        let input = try JSONValue.parse(#"{"anything": [1, "two", null, {"three": 3.5}]}"#)
        #expect(try await run("echo", in: registry, input: input) == input)
    }

    @Test func aMismatchedInputIsInvalidInputNamingThePath() async throws {
        let error = await #expect(throws: JobError.self) {
            try await run("sum", in: .demo, input: .parse(#"{"numbers": [1, "two", 3]}"#))
        }
        #expect(error?.code == "invalidInput")
        #expect(error?.retryable == false)
        #expect(error?.message.hasPrefix("input does not match ") == true)
        #expect(error?.message.contains("'sum': input.numbers[1]: expected an integer") == true)
    }

    @Test func aFractionalNumberForAnIntegerNamesThePath() async throws {
        let error = await #expect(throws: JobError.self) {
            try await run("sum", in: .demo, input: .parse(#"{"numbers": [1, 2.5]}"#))
        }
        #expect(error?.code == "invalidInput")
        // Foundation on Linux reports this as "not valid JSON" with no coding path; NumberMisfit finds the number.
        #expect(
            error?.message.hasSuffix(
                "'sum': input.numbers[1]: 2.5 is not a whole number, and the field takes integers")
                == true, "\(String(describing: error))")
    }

    @Test func aNumberOutOfRangeNamesThePathAmongNumbersThatFit() async throws {
        var registry = OperationRegistry()
        registry.register("colour", blocking: { (colour: Colour, _: JobContext) in colour.channels.count })
        let error = await #expect(throws: JobError.self) {
            try await run(
                "colour", in: registry,
                input: .parse(#"{"alpha": 0.5, "channels": [{"value": 200}, {"value": 300}], "weight": -4000}"#))
        }
        #expect(
            error?.message.hasSuffix(
                "'colour': input.channels[1].value: 300 is out of range for the field's number type")
                == true, "\(String(describing: error))")
    }

    @Test func anIntegerBeyondInt64NamesThePath() async throws {
        let error = await #expect(throws: JobError.self) {
            try await run("sum", in: .demo, input: .parse(#"{"numbers": [18446744073709551615]}"#))
        }
        #expect(
            error?.message.hasSuffix(
                "input.numbers[0]: 1.8446744073709552e+19 is out of range for the field's number type")
                == true, "\(String(describing: error))")
    }

    @Test func aMisfitAmongTooManyNumbersIsNamedWithoutAPath() async throws {
        let numbers = (0...NumberMisfit.maxProbes).map { JSONValue.number(Double($0) + 0.5) }
        let error = await #expect(throws: JobError.self) {
            try await run("sum", in: .demo, input: .object(["numbers": .array(numbers)]))
        }
        #expect(
            error?.message.hasSuffix(
                "'sum': input: a number does not fit its field's type (a fraction for an integer, or out of range)")
                == true, "\(String(describing: error))")
    }

    @Test func anInputsOwnCorruptDataErrorIsKept() async throws {
        var registry = OperationRegistry()
        registry.register("even", blocking: { (number: Even, _: JobContext) in number.value })
        let error = await #expect(throws: JobError.self) { try await run("even", in: registry, input: .number(1000)) }
        #expect(error?.message.hasSuffix("'even': input: 1000 is not odd") == true, "\(String(describing: error))")
    }

    @Test(arguments: [-5, 3_600_001]) func aSumDelayOutsideAnHourIsInvalidInput(_ delay: Int) async throws {
        let error = await #expect(throws: JobError.self) {
            try await run("sum", in: .demo, input: ["numbers": [1], "delayMs": .integer(Int64(delay))])
        }
        #expect(error?.code == "invalidInput")
        #expect(
            error?.message
                == "input does not match operation type 'sum': input.delayMs: \(delay) is outside 0...3600000")
    }

    @Test(arguments: [
        ("sleep", #"{"seconds": -1}"#, "input.seconds: -1 is outside 0...1000000000"),
        ("sleep", #"{"seconds": 2e9}"#, "input.seconds: 2000000000 is outside 0...1000000000"),
        ("fail", #"{"retryable": true, "retryAfter": -0.5}"#, "input.retryAfter: -0.5 is outside 0...31536000"),
    ])
    func aBuiltInsRangeErrorNamesItsOperationTypeAndTheNumberAsJSONWritesIt(
        type: String, input: String, detail: String
    ) async throws {
        let error = await #expect(throws: JobError.self) { try await run(type, in: .demo, input: .parse(input)) }
        #expect(error?.code == "invalidInput")
        #expect(error?.message == "input does not match operation type '\(type)': \(detail)")
    }

    @Test func anEmptyErrorCodeIsAHandlerError() async throws {
        let error = await #expect(throws: JobError.self) {
            try await run("fail", in: .demo, input: .parse(#"{"code": ""}"#))
        }
        #expect(error?.code == "handlerError" && error?.message == "failed on request")
    }

    @Test func aHandlersOwnInvalidInputReadsAsTheRegistrysOwn() async throws {
        var registry = OperationRegistry()
        registry.register(
            "thumbnail",
            blocking: { (size: Int, job: JobContext) -> Int in
                guard (1...4096).contains(size) else { throw job.invalidInput("input: \(size) is outside 1...4096") }
                return size
            })
        let error = await #expect(throws: JobError.self) { try await run("thumbnail", in: registry, input: 0) }
        #expect(error?.code == "invalidInput")
        #expect(error?.message == "input does not match operation type 'thumbnail': input: 0 is outside 1...4096")
    }

    @Test func aMissingKeyIsInvalidInputNamingTheKey() async throws {
        let error = await #expect(throws: JobError.self) {
            try await run("sum", in: .demo, input: .parse(#"{"values": [1]}"#))
        }
        #expect(error?.code == "invalidInput")
        #expect(error?.message.hasPrefix("input does not match ") == true)
        #expect(error?.message.hasSuffix("'sum': input: missing key 'numbers'") == true)
    }

    @Test func aNullFieldIsInvalidInputSayingSo() async throws {
        let error = await #expect(throws: JobError.self) {
            try await run("sum", in: .demo, input: .parse(#"{"numbers": null}"#))
        }
        #expect(
            error?.message.hasSuffix("input.numbers: expected an array, found null") == true,
            "\(String(describing: error))")
    }

    @Test func aWrongTopLevelTypeIsInvalidInput() async throws {
        let error = await #expect(throws: JobError.self) {
            try await run("sum", in: .demo, input: .string("1,2,3"))
        }
        #expect(error?.code == "invalidInput")
        #expect(
            error?.message.hasSuffix("operation type 'sum': input: expected an object") == true,
            "\(String(describing: error))")
    }

    @Test func nullInputDecodesToAnAllOptionalStruct() async throws {
        var registry = OperationRegistry()
        registry.register("options", blocking: { (options: Options, _: JobContext) in options })
        let output = try await run("options", in: registry, input: .null)
        #expect(output == .object([:]))
    }

    @Test func nullInputIsStillInvalidForRequiredFields() async throws {
        let error = await #expect(throws: JobError.self) {
            try await run("sum", in: .demo, input: .null)
        }
        #expect(error?.code == "invalidInput")
    }

    @Test func demoTypesAreListedSorted() {
        #expect(OperationRegistry.demo.types == ["echo", "fail", "sleep", "sum"])
        #expect(OperationRegistry().types.isEmpty)
    }

    @Test func demoKindsAndQueues() throws {
        let registry = OperationRegistry.demo
        for type in registry.types {
            #expect(registry[type]?.localQueue == OperationRegistry.defaultLocalQueue)
        }
        guard case .asynchronous = try #require(registry["sleep"]).body else {
            Issue.record("sleep should be asynchronous")
            return
        }
        guard case .blocking = try #require(registry["sum"]).body else {
            Issue.record("sum should be blocking")
            return
        }
    }

    @Test func demoSumAddsAndFormats() async throws {
        let output = try await run("sum", in: .demo, input: .parse(#"{"numbers": [1000, 2000, 500]}"#))
        #expect(output["sum"] == .number(3500))
        #expect(output["formattedSum"] == .string(3500.formatted()))
    }

    @Test func demoFailThrowsTheRequestedError() async throws {
        let error = await #expect(throws: JobError.self) {
            try await run(
                "fail", in: .demo, input: .parse(#"{"code": "boom", "message": "as asked", "retryable": true}"#))
        }
        #expect(error == JobError(code: "boom", message: "as asked", retryable: true))

        let defaults = await #expect(throws: JobError.self) { try await run("fail", in: .demo, input: .null) }
        #expect(defaults == JobError(code: "requestedFailure", message: "failed on request", retryable: false))
    }

    @Test func demoSleepReturnsTheSeconds() async throws {
        #expect(try await run("sleep", in: .demo, input: .parse(#"{"seconds": 0}"#)) == .parse(#"{"slept": 0}"#))
    }

    @Test func registeringAgainReplaces() async throws {
        var registry = OperationRegistry()
        registry.register("v", blocking: { (_: JSONValue, _: JobContext) in "first" })
        registry.register("v", on: "io", asynchronous: { (_: JSONValue, _: JobContext) in "second" })
        #expect(registry.types == ["v"])
        #expect(registry["v"]?.localQueue == "io")
        #expect(try await run("v", in: registry, input: .null) == .string("second"))
    }

    @Test func assignMovesATypeToAnotherLocalQueue() async throws {
        var registry = OperationRegistry.demo
        registry.assign("sum", to: "cpu")
        #expect(registry["sum"]?.localQueue == "cpu")
        #expect(registry["echo"]?.localQueue == "default")
        // The code is unchanged.
        #expect(try await run("sum", in: registry, input: .parse(#"{"numbers": [2, 3]}"#))["sum"] == .number(5))
    }

    @Test func assigningAnUnknownTypeDoesNothing() {
        var registry = OperationRegistry.demo
        registry.assign("nope", to: "cpu")
        #expect(registry.types == OperationRegistry.demo.types)
        #expect(registry["nope"] == nil)
    }

    @Test func unknownTypesAreAbsent() {
        #expect(OperationRegistry.demo["resize"] == nil)
    }
}
