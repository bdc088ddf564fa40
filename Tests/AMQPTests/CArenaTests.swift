import Testing

@testable import AMQP

/// Field tables go to C and come back through the same code that encodes queue arguments and decodes headers.
@Suite("CArena and CDecode")
struct CArenaTests {
    private func roundTrip(_ table: AMQPTable) -> AMQPTable {
        let arena = CArena()
        return CDecode.table(arena.table(table))
    }

    @Test func anEmptyTableRoundTrips() {
        #expect(roundTrip([:]).isEmpty)
    }

    @Test func everyKindOfValueRoundTrips() {
        let table: AMQPTable = [
            "bool": .bool(true),
            "false": .bool(false),
            "int": .int(-42),
            "big": .int(Int64.max),
            "double": .double(2.5),
            "string": .string("héllo"),
            "empty": .string(""),
            "bytes": .bytes([0, 1, 255]),
            "timestamp": .timestamp(1_700_000_000),
            "decimal": .decimal(decimals: 2, value: 12_345),
            "table": .table(["nested": .int(1), "deeper": .table(["x": "y"])]),
            "array": .array([.int(1), .string("two"), .array([])]),
            "emptyArray": .array([]),
            "void": .void,
        ]
        let decoded = roundTrip(table)
        #expect(decoded.count == table.count)
        for (key, value) in table where key != "empty" {
            #expect(decoded[key] == value, "\(key)")
        }
        // An empty string goes to C as zero bytes with no buffer and comes back as the empty string.
        #expect(decoded["empty"] == .string(""))
    }

    @Test func queueArgumentsRoundTrip() {
        let arguments: AMQPTable = [
            "x-max-priority": 5, "x-dead-letter-exchange": "warren.dead", "x-queue-type": "stream",
        ]
        #expect(roundTrip(arguments) == arguments)
    }

    @Test func bytesAndStringsCopyTheirContents() {
        let arena = CArena()
        let bytes = arena.bytes("warren")
        #expect(bytes.len == 6)
        #expect(CDecode.string(bytes) == "warren")
        #expect(CDecode.bytes(arena.bytes([9, 8, 7])) == [9, 8, 7])
        #expect(arena.bytes([UInt8]()).len == 0)
        #expect(CDecode.bytes(arena.bytes("")) == [])
    }
}
