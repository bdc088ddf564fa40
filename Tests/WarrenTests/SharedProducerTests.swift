import Testing

@testable import Warren

@Suite("SharedProducer")
struct SharedProducerTests {
    @Test func aMalformedURLFailsAtOnce() {
        let error = #expect(throws: WarrenError.self) { try SharedProducer(url: "http://localhost/") }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func aBrokerThatCannotBeReachedFailsEachCallThatTries() async throws {
        // Nothing listens on port 1: each call tries to connect, and says why it could not.
        let producer = try SharedProducer(url: "amqp://guest:guest@127.0.0.1:1/%2F")
        defer { producer.close() }
        for _ in 0..<2 {
            let error = await #expect(throws: WarrenError.self) {
                try await producer.enqueue(JobRequest(type: "echo"))
            }
            #expect(error?.code == .broker, "\(String(describing: error))")
        }
    }
}
