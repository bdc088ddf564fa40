import Foundation
import Testing

@testable import Warren

@Suite("CancellationRegistry")
struct CancellationRegistryTests {
    private func job(_ id: String, key: String? = nil, sequence: UInt64 = 1) -> OperationDescriptor {
        TestJobs.descriptor(id: id, sequence: sequence, key: key)
    }

    @Test func nothingIsCancelledAtFirst() {
        let registry = CancellationRegistry()
        #expect(registry.cancellation(of: job("a", key: "k", sequence: 1), queue: "jobs") == nil)
    }

    @Test func cancelsByID() {
        var registry = CancellationRegistry()
        registry.record(.cancel(jobIDs: ["a", "b"]))
        #expect(
            registry.cancellation(of: job("a"), queue: "jobs")
                == Cancellation(reason: "requested", message: "cancelled by request"))
        #expect(registry.cancellation(of: job("b", key: "k", sequence: 9), queue: "jobs")?.reason == "requested")
        #expect(registry.cancellation(of: job("c"), queue: "jobs") == nil)
    }

    @Test func theFirstCancellationOfAnIDIsKept() {
        var registry = CancellationRegistry()
        registry.record(
            ControlMessage(kind: "cancel", jobIDs: ["a"], key: "k", beforeSequence: 5, reason: "superseded"))
        registry.record(.cancel(jobIDs: ["a"]))
        #expect(registry.cancellation(of: job("a"), queue: "jobs")?.reason == "superseded")
    }

    @Test func anyOtherReasonReadsAsRequested() {
        var registry = CancellationRegistry()
        var message = ControlMessage.cancel(jobIDs: ["a"])
        message.reason = "shutdown"
        registry.record(message)
        #expect(registry.cancellation(of: job("a"), queue: "jobs") == .requested)
    }

    @Test func supersedesOlderSequencesOfAKeyOnly() {
        var registry = CancellationRegistry()
        registry.record(.supersede(key: "list", before: 10))
        let cancellation = registry.cancellation(of: job("old", key: "list", sequence: 9), queue: "jobs")
        #expect(cancellation?.reason == "superseded")
        #expect(cancellation?.message == "jobs of key 'list' below sequence 10 were cancelled")
        #expect(registry.cancellation(of: job("zero", key: "list", sequence: 0), queue: "jobs") != nil)
        #expect(registry.cancellation(of: job("same", key: "list", sequence: 10), queue: "jobs") == nil)
        #expect(registry.cancellation(of: job("newer", key: "list", sequence: 11), queue: "jobs") == nil)
        #expect(registry.cancellation(of: job("other", key: "other", sequence: 1), queue: "jobs") == nil)
        #expect(registry.cancellation(of: job("keyless", key: nil, sequence: 1), queue: "jobs") == nil)
    }

    @Test func aLaterSupersedeRaisesTheBarButAnEarlierOneNeverLowersIt() {
        var registry = CancellationRegistry()
        registry.record(.supersede(key: "list", before: 10))
        registry.record(.supersede(key: "list", before: 20))
        #expect(registry.cancellation(of: job("a", key: "list", sequence: 15), queue: "jobs") != nil)
        registry.record(.supersede(key: "list", before: 5))
        #expect(registry.cancellation(of: job("b", key: "list", sequence: 15), queue: "jobs") != nil)
        #expect(registry.cancellation(of: job("c", key: "list", sequence: 20), queue: "jobs") == nil)
    }

    @Test func forgetsTheOldestIDsPastCapacity() {
        var registry = CancellationRegistry(capacity: 3)
        for id in ["a", "b", "c", "d", "e"] { registry.record(.cancel(jobIDs: [id])) }
        #expect(registry.cancellation(of: job("a"), queue: "jobs") == nil)
        #expect(registry.cancellation(of: job("b"), queue: "jobs") == nil)
        #expect(registry.cancellation(of: job("c"), queue: "jobs") != nil)
        #expect(registry.cancellation(of: job("d"), queue: "jobs") != nil)
        #expect(registry.cancellation(of: job("e"), queue: "jobs") != nil)
    }

    @Test func forgetsTheOldestIDsOfOneLargeMessagePastCapacity() {
        var registry = CancellationRegistry(capacity: 2)
        registry.record(.cancel(jobIDs: ["a", "b", "c"]))
        #expect(registry.cancellation(of: job("a"), queue: "jobs") == nil)
        #expect(registry.cancellation(of: job("b"), queue: "jobs") != nil)
        #expect(registry.cancellation(of: job("c"), queue: "jobs") != nil)
    }

    @Test func forgetsTheOldestKeysPastCapacity() {
        var registry = CancellationRegistry(capacity: 2)
        for key in ["k1", "k2", "k3"] { registry.record(.supersede(key: key, before: 10)) }
        #expect(registry.cancellation(of: job("a", key: "k1", sequence: 1), queue: "jobs") == nil)
        #expect(registry.cancellation(of: job("b", key: "k2", sequence: 1), queue: "jobs") != nil)
        #expect(registry.cancellation(of: job("c", key: "k3", sequence: 1), queue: "jobs") != nil)
    }

    @Test func idsAndKeysHaveSeparateCapacities() {
        var registry = CancellationRegistry(capacity: 1)
        registry.record(.cancel(jobIDs: ["a"]))
        registry.record(.supersede(key: "k", before: 10))
        #expect(registry.cancellation(of: job("a"), queue: "jobs") != nil)
        #expect(registry.cancellation(of: job("b", key: "k", sequence: 1), queue: "jobs") != nil)
    }

    @Test func aSupersedeBeforeZeroCancelsNothingAndTakesNoSlot() {
        var registry = CancellationRegistry(capacity: 2)
        registry.record(.supersede(key: "k", before: 0))
        #expect(registry.cancellation(of: job("a", key: "k", sequence: 0), queue: "jobs") == nil)
        registry.record(.supersede(key: "k", before: 10))
        registry.record(.supersede(key: "j", before: 10))
        // Two keys, capacity two: both must still be remembered.
        #expect(registry.cancellation(of: job("b", key: "j", sequence: 5), queue: "jobs") != nil)
        #expect(registry.cancellation(of: job("c", key: "k", sequence: 5), queue: "jobs") != nil)
    }

    @Test func cancelAllCancelsOlderJobsOfItsQueueOrOfEveryQueue() {
        var registry = CancellationRegistry()
        registry.record(.cancelAll(before: 100, queue: "images"))
        #expect(registry.cancellation(of: job("a", sequence: 99), queue: "images")?.reason == "requested")
        #expect(registry.cancellation(of: job("b", sequence: 100), queue: "images") == nil)
        #expect(registry.cancellation(of: job("c", sequence: 50), queue: "mail") == nil)
        registry.record(.cancelAll(before: 60))
        #expect(registry.cancellation(of: job("d", sequence: 50), queue: "mail") != nil)
        #expect(registry.cancellation(of: job("e", sequence: 70), queue: "mail") == nil)
    }

    @Test func aSyncMessageCancelsNothing() {
        var registry = CancellationRegistry()
        registry.record(.sync(token: "t"))
        #expect(registry.cancellation(of: job("t"), queue: "jobs") == nil)
    }
}
