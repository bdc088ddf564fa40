import Testing

@testable import AMQP

@Suite("AMQPFieldValue")
struct AMQPFieldValueTests {
    @Test func literalsPickTheMatchingCase() {
        let string: AMQPFieldValue = "stream"
        let integer: AMQPFieldValue = 5
        let boolean: AMQPFieldValue = true
        #expect(string == .string("stream"))
        #expect(integer == .int(5))
        #expect(boolean == .bool(true))
    }

    @Test func stringValueReadsStringsAndUTF8Bytes() {
        #expect(AMQPFieldValue.string("a").stringValue == "a")
        #expect(AMQPFieldValue.bytes(Array("héllo".utf8)).stringValue == "héllo")
        #expect(AMQPFieldValue.bytes([0xFF, 0xFE]).stringValue == nil)
        #expect(AMQPFieldValue.int(1).stringValue == nil)
    }

    @Test func intValueReadsIntegersOnly() {
        #expect(AMQPFieldValue.int(-3).intValue == -3)
        #expect(AMQPFieldValue.double(3).intValue == nil)
        #expect(AMQPFieldValue.string("3").intValue == nil)
    }
}
