import Foundation

extension JSONWriter {
    /// The JSON body of `descriptor` as ``WireCoding/encoder`` writes it, or `nil` where `JSONEncoder` must write it.
    static func bytes(for descriptor: OperationDescriptor) -> [UInt8]? {
        bytes(reserving: 256) { try $0.write(descriptor) }
    }

    // The keys in sorted order, as JSONEncoder's `.sortedKeys` writes them; an optional that is `nil` is left out,
    // as the synthesised `encode(to:)` leaves it out, and `input` is always written (`null` too).
    private mutating func write(_ descriptor: OperationDescriptor) throws {
        beginObject()
        try date("createdAt", descriptor.createdAt)
        try date("deadline", descriptor.deadline)
        if let dependencies = descriptor.dependencies {
            key("dependencies")
            array(dependencies)
        }
        key("id")
        string(descriptor.id)
        key("input")
        try value(descriptor.input)
        if let jobKey = descriptor.key {
            key("key")
            string(jobKey)
        }
        if let maxAttempts = descriptor.maxAttempts {
            key("maxAttempts")
            integer(maxAttempts)
        }
        try date("notBefore", descriptor.notBefore)
        key("priority")
        string(descriptor.priority.rawValue)
        if let requireSuccess = descriptor.requireSuccess {
            key("requireSuccess")
            bool(requireSuccess)
        }
        key("sequence")
        integer(descriptor.sequence)
        if let timeLimit = descriptor.timeLimitSeconds {
            key("timeLimitSeconds")
            try number(timeLimit)
        }
        key("type")
        string(descriptor.type)
        if let unique = descriptor.unique {
            key("unique")
            bool(unique)
        }
        key("version")
        integer(descriptor.version)
        endObject()
    }
}
