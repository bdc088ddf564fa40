internal import CRabbitMQ
import Testing

@testable import AMQP

/// The frames ``FrameBuffer`` writes, read back byte by byte as the AMQP 0-9-1 framing defines them.
@Suite("FrameBuffer")
struct FrameBufferTests {
    /// One frame: its type, channel and payload, checked for its end marker.
    private struct Frame {
        let type: UInt8
        let channel: UInt16
        let payload: [UInt8]
    }

    private func frames(in buffer: FrameBuffer) -> [Frame] {
        let bytes = Array(buffer.bytes)
        var frames: [Frame] = []
        var offset = 0
        while offset < bytes.count {
            let channel = UInt16(bytes[offset + 1]) << 8 | UInt16(bytes[offset + 2])
            let size = bytes[offset + 3..<offset + 7].reduce(0) { $0 << 8 | Int($1) }
            let end = offset + 7 + size
            #expect(bytes[end] == 0xCE, "frame end marker")
            frames.append(Frame(type: bytes[offset], channel: channel, payload: Array(bytes[offset + 7..<end])))
            offset = end + 1
        }
        return frames
    }

    @Test func aBodyLargerThanTheFrameSizeSpansBodyFramesOfAtMostTheFrameSize() {
        let buffer = FrameBuffer()
        let arena = CArena()
        var method = amqp_basic_publish_t(
            ticket: 0, exchange: arena.bytes("ex"), routing_key: arena.bytes("key"), mandatory: 0, immediate: 0)
        var properties = MessageProperties(contentType: "application/json", persistent: true).encoded(in: arena)
        let body = (0..<10_000).map { UInt8(truncatingIfNeeded: $0) }
        let status = body.withUnsafeBytes {
            buffer.appendPublish(&method, properties: &properties, body: $0, channel: 3, frameMax: 4096)
        }
        #expect(status == AMQP_STATUS_OK.rawValue)

        let written = frames(in: buffer)
        #expect(written.map(\.type) == [1, 2, 3, 3, 3])
        #expect(written.allSatisfy { $0.channel == 3 })
        // basic.publish: class 60, method 40, then ticket, exchange and routing key as short strings, then flags.
        #expect(written[0].payload == [0, 60, 0, 40, 0, 0, 2] + Array("ex".utf8) + [3] + Array("key".utf8) + [0])
        // The header: class 60, weight 0, the body size in 64 bits, then the properties.
        #expect(Array(written[1].payload.prefix(12)) == [0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0x27, 0x10])
        #expect(written[2...].map(\.payload.count) == [4088, 4088, 1824])
        #expect(Array(written[2...].map(\.payload).joined()) == body)
        #expect(buffer.count == written.reduce(0) { $0 + $1.payload.count + FrameBuffer.frameOverhead })
    }

    @Test func aPublishWhosePropertiesDoNotFitLeavesNothingBehind() {
        let buffer = FrameBuffer()
        let arena = CArena()
        var ack = amqp_basic_ack_t(delivery_tag: 1, multiple: 0)
        _ = buffer.appendMethod(
            amqp_method_number_t(AMQP_BASIC_ACK_METHOD), arguments: &ack, channel: 1, frameMax: 4096)
        let before = Array(buffer.bytes)
        var method = amqp_basic_publish_t(
            ticket: 0, exchange: arena.bytes(""), routing_key: arena.bytes("key"), mandatory: 0, immediate: 0)
        let huge = MessageProperties(headers: ["big": .string(String(repeating: "x", count: 5_000))])
        var properties = huge.encoded(in: arena)
        let status = [UInt8]("body".utf8).withUnsafeBytes {
            buffer.appendPublish(&method, properties: &properties, body: $0, channel: 1, frameMax: 4096)
        }
        #expect(status != AMQP_STATUS_OK.rawValue)
        #expect(Array(buffer.bytes) == before, "the ack written before is all the buffer holds")
    }

    @Test func anAckIsOneMethodFrameAndRemoveAllForgetsWhatWasWritten() {
        let buffer = FrameBuffer()
        var ack = amqp_basic_ack_t(delivery_tag: 0x0102_0304_0506_0708, multiple: 1)
        #expect(
            buffer.appendMethod(
                amqp_method_number_t(AMQP_BASIC_ACK_METHOD), arguments: &ack, channel: 1, frameMax: 131_072)
                == AMQP_STATUS_OK.rawValue)
        let written = frames(in: buffer)
        #expect(written.count == 1)
        // basic.ack: class 60, method 80, the delivery tag in 64 bits, then `multiple` as a bit.
        #expect(written.first?.payload == [0, 60, 0, 80, 1, 2, 3, 4, 5, 6, 7, 8, 1])
        buffer.removeAll()
        #expect(buffer.count == 0)
        #expect(buffer.bytes.isEmpty)
    }
}
