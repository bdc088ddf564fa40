import ArgumentParser
import Testing

@testable import WarrenCLI

@Suite("warren resize")
struct ResizeCommandTests {
    @Test(arguments: [
        (["default=0"], "resize default=0: expected a width from 1 to 10000"),
        (["default=10001"], "resize default=10001: expected a width from 1 to 10000"),
        (["default=many"], "resize default=many: expected a width from 1 to 10000"),
        (["default"], "resize default: expected name=width"),
        (["io=2", "io=3"], "resize: io is given twice"),
    ])
    func badSizesAreRefused(arguments: [String], message: String) {
        let error = #expect(throws: (any Error).self) { try ResizeCommand.parse(arguments) }
        #expect(error.map(ResizeCommand.message(for:)) == message)
    }

    @Test func sizesAndAWorkerAreAccepted() throws {
        let command = try ResizeCommand.parse(["default=8", "io=32", "--worker", "worker-2"])
        #expect(command.sizes == ["default=8", "io=32"])
        #expect(command.worker == "worker-2")
    }
}
