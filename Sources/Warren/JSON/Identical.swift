import Foundation

/// Equality without the leniency of `==`, for comparing the fast paths with Foundation: strings by their scalars
/// (`==` holds for canonically equivalent ones), doubles and dates by their bits (`==` holds for 0 and -0).
///
/// Thread safety: stateless.
@_spi(Fuzzing) public enum Identical {
    public static func strings(_ a: String?, _ b: String?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let a?, let b?): return a.unicodeScalars.elementsEqual(b.unicodeScalars)
        default: return false
        }
    }

    public static func dates(_ a: Date?, _ b: Date?) -> Bool {
        a?.timeIntervalSinceReferenceDate.bitPattern == b?.timeIntervalSinceReferenceDate.bitPattern
    }

    public static func values(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x.bitPattern == y.bitPattern
        case (.integer(let x), .integer(let y)): return x == y
        case (.string(let x), .string(let y)): return strings(x, y)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(values)
        case (.object(let x), .object(let y)):
            return x.count == y.count
                && x.allSatisfy { key, value in
                    // Dictionary keys compare as Swift strings: check that the key found has the same scalars.
                    guard let index = y.index(forKey: key) else { return false }
                    return strings(key, y[index].key) && values(value, y[index].value)
                }
        default: return false
        }
    }

    public static func descriptors(_ a: OperationDescriptor, _ b: OperationDescriptor) -> Bool {
        a.version == b.version && strings(a.id, b.id) && strings(a.type, b.type) && values(a.input, b.input)
            && a.priority == b.priority && a.sequence == b.sequence && strings(a.key, b.key)
            && dates(a.deadline, b.deadline) && dates(a.notBefore, b.notBefore) && dates(a.createdAt, b.createdAt)
            && a.maxAttempts == b.maxAttempts && a.timeLimitSeconds?.bitPattern == b.timeLimitSeconds?.bitPattern
            && a.unique == b.unique
            && a.dependencies?.count == b.dependencies?.count
            && zip(a.dependencies ?? [], b.dependencies ?? []).allSatisfy(strings)
            && a.requireSuccess == b.requireSuccess
    }

    public static func results(_ a: JobResult, _ b: JobResult) -> Bool {
        a.version == b.version && strings(a.jobID, b.jobID) && strings(a.type, b.type) && a.sequence == b.sequence
            && strings(a.key, b.key) && a.status == b.status
            && (a.output == nil) == (b.output == nil) && values(a.output ?? .null, b.output ?? .null)
            && strings(a.error?.code, b.error?.code) && strings(a.error?.message, b.error?.message)
            && a.error?.retryable == b.error?.retryable && a.error?.retryAfter == b.error?.retryAfter
            && strings(a.cancellation?.reason, b.cancellation?.reason)
            && strings(a.cancellation?.message, b.cancellation?.message)
            && a.attempt == b.attempt && a.redelivered == b.redelivered && dates(a.requeuedAt, b.requeuedAt)
            && strings(a.workerID, b.workerID) && dates(a.timings.enqueuedAt, b.timings.enqueuedAt)
            && dates(a.timings.receivedAt, b.timings.receivedAt) && dates(a.timings.startedAt, b.timings.startedAt)
            && dates(a.timings.finishedAt, b.timings.finishedAt)
    }
}
