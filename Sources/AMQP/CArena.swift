internal import CRabbitMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Owns the C memory that one librabbitmq call borrows (strings, tables, bodies), and frees it when released.
///
/// Small allocations come from one block, taken on first use (a publish's properties and names fit in it: one
/// `malloc` per call rather than one per string); larger ones get their own.
///
/// Confined: created, used and released inside a single method on the connection's owning thread.
final class CArena {
    private static let blockSize = 1024
    private var block: UnsafeMutableRawPointer?
    private var used = 0
    private var allocations: [UnsafeMutableRawPointer] = []

    deinit {
        free(block)
        for pointer in allocations { free(pointer) }
    }

    func bytes(_ string: String) -> amqp_bytes_t {
        var string = string
        return string.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }

    func bytes(_ array: [UInt8]) -> amqp_bytes_t {
        array.withUnsafeBytes { bytes($0) }
    }

    private func bytes(_ source: UnsafeRawBufferPointer) -> amqp_bytes_t {
        guard let base = source.baseAddress, !source.isEmpty else { return amqp_bytes_t(len: 0, bytes: nil) }
        let pointer = allocate(byteCount: source.count, alignment: 1)
        pointer.copyMemory(from: base, byteCount: source.count)
        return amqp_bytes_t(len: source.count, bytes: pointer)
    }

    func table(_ table: AMQPTable) -> amqp_table_t {
        guard !table.isEmpty else { return amqp_table_t(num_entries: 0, entries: nil) }
        let entries = allocate(amqp_table_entry_t.self, count: table.count)
        for (index, (key, value)) in table.sorted(by: { $0.key < $1.key }).enumerated() {
            entries[index] = amqp_table_entry_t(key: bytes(key), value: field(value))
        }
        return amqp_table_t(num_entries: Int32(table.count), entries: entries)
    }

    private func field(_ value: AMQPFieldValue) -> amqp_field_value_t {
        var field = amqp_field_value_t()
        switch value {
        case .bool(let b):
            field.kind = UInt8(AMQP_FIELD_KIND_BOOLEAN.rawValue)
            field.value.boolean = b ? 1 : 0
        case .int(let i):
            field.kind = UInt8(AMQP_FIELD_KIND_I64.rawValue)
            field.value.i64 = i
        case .double(let d):
            field.kind = UInt8(AMQP_FIELD_KIND_F64.rawValue)
            field.value.f64 = d
        case .string(let s):
            field.kind = UInt8(AMQP_FIELD_KIND_UTF8.rawValue)
            field.value.bytes = bytes(s)
        case .bytes(let b):
            field.kind = UInt8(AMQP_FIELD_KIND_BYTES.rawValue)
            field.value.bytes = bytes(b)
        case .timestamp(let t):
            field.kind = UInt8(AMQP_FIELD_KIND_TIMESTAMP.rawValue)
            field.value.u64 = t
        case .decimal(let decimals, let value):
            field.kind = UInt8(AMQP_FIELD_KIND_DECIMAL.rawValue)
            field.value.decimal = amqp_decimal_t(decimals: decimals, value: value)
        case .table(let t):
            field.kind = UInt8(AMQP_FIELD_KIND_TABLE.rawValue)
            field.value.table = table(t)
        case .array(let values):
            field.kind = UInt8(AMQP_FIELD_KIND_ARRAY.rawValue)
            let entries = allocate(amqp_field_value_t.self, count: max(values.count, 1))
            for (index, element) in values.enumerated() { entries[index] = self.field(element) }
            field.value.array = amqp_array_t(num_entries: Int32(values.count), entries: entries)
        case .void:
            field.kind = UInt8(AMQP_FIELD_KIND_VOID.rawValue)
        }
        return field
    }

    private func allocate<T>(_ type: T.Type, count: Int) -> UnsafeMutablePointer<T> {
        let byteCount = count * MemoryLayout<T>.stride
        let raw = allocate(byteCount: byteCount, alignment: MemoryLayout<T>.alignment)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        return raw.bindMemory(to: T.self, capacity: count)
    }

    /// Uninitialised memory, from the block while it has room.
    private func allocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer {
        let start = (used + alignment - 1) & ~(alignment - 1)
        if start + byteCount <= Self.blockSize {
            let block = self.block ?? malloc(Self.blockSize)!
            self.block = block
            used = start + byteCount
            return block + start
        }
        let pointer = malloc(max(byteCount, 1))!
        allocations.append(pointer)
        return pointer
    }
}

/// Decoding of librabbitmq's C values into Swift values; nothing borrowed escapes.
enum CDecode {
    static func bytes(_ bytes: amqp_bytes_t) -> [UInt8] {
        guard bytes.len > 0, let base = bytes.bytes else { return [] }
        return Array(UnsafeRawBufferPointer(start: base, count: bytes.len))
    }

    static func string(_ bytes: amqp_bytes_t) -> String {
        guard bytes.len > 0, let base = bytes.bytes else { return "" }
        let utf8 = UnsafeRawBufferPointer(start: base, count: bytes.len).bindMemory(to: UInt8.self)
        return String(decoding: utf8, as: UTF8.self)
    }

    static func table(_ table: amqp_table_t) -> AMQPTable {
        var result: AMQPTable = [:]
        guard table.num_entries > 0, let entries = table.entries else { return result }
        for index in 0..<Int(table.num_entries) {
            result[string(entries[index].key)] = field(entries[index].value)
        }
        return result
    }

    static func field(_ field: amqp_field_value_t) -> AMQPFieldValue {
        switch UInt32(field.kind) {
        case AMQP_FIELD_KIND_BOOLEAN.rawValue: return .bool(field.value.boolean != 0)
        case AMQP_FIELD_KIND_I8.rawValue: return .int(Int64(field.value.i8))
        case AMQP_FIELD_KIND_U8.rawValue: return .int(Int64(field.value.u8))
        case AMQP_FIELD_KIND_I16.rawValue: return .int(Int64(field.value.i16))
        case AMQP_FIELD_KIND_U16.rawValue: return .int(Int64(field.value.u16))
        case AMQP_FIELD_KIND_I32.rawValue: return .int(Int64(field.value.i32))
        case AMQP_FIELD_KIND_U32.rawValue: return .int(Int64(field.value.u32))
        case AMQP_FIELD_KIND_I64.rawValue: return .int(field.value.i64)
        case AMQP_FIELD_KIND_U64.rawValue: return .int(Int64(truncatingIfNeeded: field.value.u64))
        case AMQP_FIELD_KIND_F32.rawValue: return .double(Double(field.value.f32))
        case AMQP_FIELD_KIND_F64.rawValue: return .double(field.value.f64)
        case AMQP_FIELD_KIND_UTF8.rawValue: return .string(string(field.value.bytes))
        case AMQP_FIELD_KIND_BYTES.rawValue: return .bytes(bytes(field.value.bytes))
        case AMQP_FIELD_KIND_TIMESTAMP.rawValue: return .timestamp(field.value.u64)
        case AMQP_FIELD_KIND_DECIMAL.rawValue:
            return .decimal(decimals: field.value.decimal.decimals, value: field.value.decimal.value)
        case AMQP_FIELD_KIND_TABLE.rawValue: return .table(table(field.value.table))
        case AMQP_FIELD_KIND_ARRAY.rawValue:
            let array = field.value.array
            guard array.num_entries > 0, let entries = array.entries else { return .array([]) }
            return .array((0..<Int(array.num_entries)).map { self.field(entries[$0]) })
        default: return .void
        }
    }
}
