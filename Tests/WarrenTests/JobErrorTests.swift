import Foundation
import Testing

@testable import Warren

@Suite struct JobErrorTests {
    @Test("retryAfter is bounded to 0 … a year, and is no part of a result's error on the wire")
    func retryAfter() throws {
        #expect(JobError(code: "c", message: "m", retryable: true, retryAfter: .seconds(-5)).retryAfter == .zero)
        #expect(
            JobError(code: "c", message: "m", retryable: true, retryAfter: .seconds(1e10)).retryAfter
                == JobError.maxRetryAfter)
        let error = JobError(code: "rateLimited", message: "try later", retryable: true, retryAfter: .seconds(30))
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(error)) as? [String: Any]
        #expect(json?.keys.sorted() == ["code", "message", "retryable"])
        let decoded = try JSONDecoder().decode(JobError.self, from: JSONEncoder().encode(error))
        #expect(decoded.retryAfter == nil && decoded.code == "rateLimited" && decoded.retryable)
    }
}
