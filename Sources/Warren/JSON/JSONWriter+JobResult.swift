import Foundation

extension JSONWriter {
    /// The JSON body of `result` as ``WireCoding/encoder`` writes it, or `nil` where `JSONEncoder` must write it.
    static func bytes(for result: JobResult) -> [UInt8]? {
        bytes(reserving: 512) { try $0.write(result) }
    }

    // Every object below lists its keys in sorted order, as JSONEncoder's `.sortedKeys` writes them; an optional
    // that is `nil` is left out, as the synthesised `encode(to:)` leaves it out.
    private mutating func write(_ result: JobResult) throws {
        beginObject()
        key("attempt")
        integer(result.attempt)
        if let cancellation = result.cancellation {
            key("cancellation")
            beginObject()
            key("message")
            string(cancellation.message)
            key("reason")
            string(cancellation.reason)
            endObject()
        }
        if let error = result.error {
            key("error")
            beginObject()
            key("code")
            string(error.code)
            key("message")
            string(error.message)
            key("retryable")
            bool(error.retryable)
            endObject()
        }
        key("jobId")
        string(result.jobID)
        if let jobKey = result.key {
            key("key")
            string(jobKey)
        }
        if let output = result.output {
            key("output")
            try value(output)
        }
        key("redelivered")
        bool(result.redelivered)
        try date("requeuedAt", result.requeuedAt)
        key("sequence")
        integer(result.sequence)
        key("status")
        string(result.status.rawValue)
        key("timings")
        try timings(result.timings)
        if let type = result.type {
            key("type")
            string(type)
        }
        key("version")
        integer(result.version)
        key("workerId")
        string(result.workerID)
        endObject()
    }

    private mutating func timings(_ timings: JobTimings) throws {
        beginObject()
        try date("enqueuedAt", timings.enqueuedAt)
        try date("finishedAt", timings.finishedAt)
        try date("receivedAt", timings.receivedAt)
        try date("startedAt", timings.startedAt)
        endObject()
    }
}
