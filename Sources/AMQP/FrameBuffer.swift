internal import CRabbitMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// AMQP frames written out in user space, to be sent to the socket with one system call.
///
/// librabbitmq sends every frame with a `send` of its own: a publish costs three (method, header, body), each a
/// trip through the kernel's TCP stack even when the socket is corked. Frames encoded here with librabbitmq's own
/// encoders (`amqp_encode_method`, `amqp_encode_properties`) leave together: a turn of a worker's loop that
/// publishes fifty results and acknowledges their jobs costs one `send`.
///
/// Thread safety: confined to the thread that owns its ``AMQPConnection``.
final class FrameBuffer {
    /// The bytes of one frame around its payload: type, channel and size before, the end marker after.
    static let frameOverhead = 8
    private static let frameEnd: UInt8 = 0xCE
    /// Larger bodies are sent from where they are (``AMQPConnection`` sends what is held first), not copied here.
    static let largestCopiedBody = 65_536
    /// What the buffer shrinks back to once sent, when a turn made it larger than ``keptCapacity``.
    private static let initialCapacity = 16_384
    private static let keptCapacity = 1 << 20

    private var storage: UnsafeMutableRawPointer
    private var capacity: Int
    /// Bytes written and not yet sent.
    private(set) var count = 0

    init() {
        capacity = Self.initialCapacity
        storage = malloc(capacity)!
    }

    deinit {
        free(storage)
    }

    /// The bytes to send.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage, count: count) }

    /// Forgets what was written, and gives back the memory of an exceptionally large turn.
    func removeAll() {
        count = 0
        guard capacity > Self.keptCapacity else { return }
        capacity = Self.initialCapacity
        storage = realloc(storage, capacity)!
    }

    /// Appends a method frame.
    /// - Parameters:
    ///   - method: The method's number (class and method id), as librabbitmq names them.
    ///   - arguments: The method's librabbitmq struct (`amqp_basic_ack_t` for `basic.ack`, and so on).
    ///   - frameMax: The connection's negotiated frame size: the frame must fit in it.
    /// - Returns: librabbitmq's status: `AMQP_STATUS_OK`, or the encoder's error for arguments too large.
    func appendMethod(
        _ method: amqp_method_number_t, arguments: UnsafeMutableRawPointer, channel: UInt16, frameMax: Int
    ) -> Int32 {
        let room = frameMax - Self.frameOverhead
        return appendFrame(type: UInt8(AMQP_FRAME_METHOD), channel: channel, room: room) { payload in
            // The method's number, then its arguments.
            Self.store32(method, at: payload)
            let encoded = amqp_encode_method(method, arguments, amqp_bytes_t(len: room - 4, bytes: payload + 4))
            return encoded < 0 ? encoded : encoded + 4
        }
    }

    /// Appends a `basic.publish` and its content, or nothing: a publish whose properties do not fit in a frame
    /// leaves no method frame behind for the broker to wait for content after.
    /// - Returns: librabbitmq's status: `AMQP_STATUS_OK`, or the encoder's error for names or properties too large.
    func appendPublish(
        _ method: inout amqp_basic_publish_t, properties: inout amqp_basic_properties_t, body: UnsafeRawBufferPointer,
        channel: UInt16, frameMax: Int
    ) -> Int32 {
        let start = count
        var status = appendMethod(
            amqp_method_number_t(AMQP_BASIC_PUBLISH_METHOD), arguments: &method, channel: channel, frameMax: frameMax)
        if status == AMQP_STATUS_OK.rawValue {
            status = appendContent(properties: &properties, body: body, channel: channel, frameMax: frameMax)
        }
        if status != AMQP_STATUS_OK.rawValue { count = start }
        return status
    }

    /// Appends a message's content: its header frame, then its body in as many body frames as `frameMax` needs.
    /// - Returns: librabbitmq's status: `AMQP_STATUS_OK`, or the encoder's error for properties too large.
    private func appendContent(
        properties: UnsafeMutablePointer<amqp_basic_properties_t>, body: UnsafeRawBufferPointer, channel: UInt16,
        frameMax: Int
    ) -> Int32 {
        let room = frameMax - Self.frameOverhead
        let header = appendFrame(type: UInt8(AMQP_FRAME_HEADER), channel: channel, room: room) { payload in
            Self.store16(UInt16(AMQP_BASIC_CLASS), at: payload)
            Self.store16(0, at: payload + 2)  // weight
            Self.store64(UInt64(body.count), at: payload + 4)
            let encoded = amqp_encode_properties(
                UInt16(AMQP_BASIC_CLASS), properties, amqp_bytes_t(len: room - 12, bytes: payload + 12))
            return encoded < 0 ? encoded : encoded + 12
        }
        guard header == AMQP_STATUS_OK.rawValue else { return header }
        var offset = 0
        while offset < body.count {
            let length = min(room, body.count - offset)
            _ = appendFrame(type: UInt8(AMQP_FRAME_BODY), channel: channel, room: length) { payload in
                payload.copyMemory(from: body.baseAddress! + offset, byteCount: length)
                return Int32(length)
            }
            offset += length
        }
        return AMQP_STATUS_OK.rawValue
    }

    /// Appends one frame whose payload `write` puts at the pointer it gets, in at most `room` bytes, and whose
    /// length, or a negative librabbitmq status, it returns.
    private func appendFrame(
        type: UInt8, channel: UInt16, room: Int, _ write: (UnsafeMutableRawPointer) -> Int32
    ) -> Int32 {
        reserve(room + Self.frameOverhead)
        let frame = storage + count
        let length = write(frame + 7)
        guard length >= 0 else { return length }
        frame.storeBytes(of: type, as: UInt8.self)
        Self.store16(channel, at: frame + 1)
        Self.store32(UInt32(length), at: frame + 3)
        (frame + 7 + Int(length)).storeBytes(of: Self.frameEnd, as: UInt8.self)
        count += Int(length) + Self.frameOverhead
        return AMQP_STATUS_OK.rawValue
    }

    /// Makes room for `bytes` more.
    private func reserve(_ bytes: Int) {
        guard count + bytes > capacity else { return }
        capacity = max(capacity * 2, count + bytes)
        storage = realloc(storage, capacity)!
    }

    private static func store16(_ value: UInt16, at pointer: UnsafeMutableRawPointer) {
        pointer.storeBytes(of: value.bigEndian, as: UInt16.self)
    }

    private static func store32(_ value: UInt32, at pointer: UnsafeMutableRawPointer) {
        pointer.storeBytes(of: value.bigEndian, as: UInt32.self)
    }

    private static func store64(_ value: UInt64, at pointer: UnsafeMutableRawPointer) {
        pointer.storeBytes(of: value.bigEndian, as: UInt64.self)
    }
}
