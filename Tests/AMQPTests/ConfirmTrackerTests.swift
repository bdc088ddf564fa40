import Testing

@testable import AMQP

@Suite("ConfirmTracker")
struct ConfirmTrackerTests {
    /// A tracker of publishes 1...count, each with its number as text.
    private func tracker(publishes count: UInt64) -> ConfirmTracker<String> {
        var tracker = ConfirmTracker<String>()
        for number in 1...count { tracker.track(number, "p\(number)") }
        return tracker
    }

    @Test func aMultipleAckAnswersEveryPublishUpToItsNumberInOrder() {
        var tracker = tracker(publishes: 5)
        let answers = tracker.answer(upTo: 3, multiple: true, ack: true)
        #expect(answers.map(\.payload) == ["p1", "p2", "p3"])
        #expect(answers.map(\.number) == [1, 2, 3])
        #expect(answers.allSatisfy { $0.isAck })
        #expect(tracker.count == 2)
        #expect(!tracker.isAwaiting(3) && tracker.isAwaiting(4))
    }

    @Test func singleAnswersOutOfOrderAreEachTakenOnce() {
        var tracker = tracker(publishes: 4)
        #expect(tracker.answer(upTo: 3, multiple: false, ack: true).map(\.payload) == ["p3"])
        #expect(tracker.answer(upTo: 3, multiple: false, ack: true).isEmpty)
        #expect(tracker.answer(upTo: 1, multiple: false, ack: false).map(\.payload) == ["p1"])
        // The multiple answer after them covers only what still waits.
        let rest = tracker.answer(upTo: 4, multiple: true, ack: true)
        #expect(rest.map(\.payload) == ["p2", "p4"])
        #expect(tracker.isEmpty)
    }

    @Test func aNackMarksJustTheNumbersItAnswers() {
        var tracker = tracker(publishes: 4)
        _ = tracker.answer(upTo: 2, multiple: false, ack: true)
        let refused = tracker.answer(upTo: 3, multiple: true, ack: false)
        #expect(refused.map(\.number) == [1, 3])
        #expect(refused.allSatisfy { !$0.isAck })
        #expect(tracker.isAwaiting(4))
        #expect(tracker.answer(upTo: 4, multiple: false, ack: true).map(\.isAck) == [true])
    }

    @Test func numbersNeverTrackedOrAlreadyAnsweredAreIgnored() {
        var tracker = ConfirmTracker<String>()
        tracker.track(2, "p2")
        tracker.track(5, "p5")
        #expect(tracker.answer(upTo: 1, multiple: false, ack: true).isEmpty)
        #expect(tracker.answer(upTo: 3, multiple: false, ack: true).isEmpty)
        #expect(tracker.answer(upTo: 4, multiple: true, ack: true).map(\.payload) == ["p2"])
        #expect(tracker.answer(upTo: 4, multiple: true, ack: true).isEmpty)
        #expect(tracker.answer(upTo: 9, multiple: false, ack: true).isEmpty)
        #expect(tracker.count == 1)
    }

    @Test func aNumberTrackedTwiceIsAnsweredForEachPayload() {
        var tracker = ConfirmTracker<String>()
        tracker.track(1, "result")
        tracker.track(1, "copy")
        tracker.track(2, "other")
        #expect(tracker.answer(upTo: 1, multiple: false, ack: true).map(\.payload) == ["result", "copy"])
        #expect(tracker.count == 1)
    }

    @Test func aNumberTrackedLateIsPutInItsPlace() {
        var tracker = ConfirmTracker<String>()
        tracker.track(1, "p1")
        tracker.track(3, "p3")
        tracker.track(2, "p2")
        #expect(tracker.answer(upTo: 3, multiple: true, ack: true).map(\.payload) == ["p1", "p2", "p3"])
    }

    @Test func theClosureFormHandsTheSameAnswersAndStopsWhereItThrows() throws {
        struct Stop: Error {}
        var tracker = tracker(publishes: 4)
        var seen: [String] = []
        #expect(throws: Stop.self) {
            try tracker.answer(upTo: 4, multiple: true, ack: true) { answer in
                seen.append(answer.payload)
                if answer.number == 2 { throw Stop() }
            }
        }
        #expect(seen == ["p1", "p2"])
        // Those it did not see still wait.
        #expect(tracker.count == 2 && tracker.isAwaiting(3) && tracker.isAwaiting(4))
        var rest: [String] = []
        tracker.answer(upTo: 4, multiple: true, ack: true) { rest.append($0.payload) }
        #expect(rest == ["p3", "p4"])
    }

    @Test func removeAllHandsBackWhatWaitsInOrderAndNumberingCanStartAgain() {
        var tracker = tracker(publishes: 4)
        _ = tracker.answer(upTo: 2, multiple: false, ack: true)
        let left = tracker.removeAll()
        #expect(left.map(\.number) == [1, 3, 4])
        #expect(left.map(\.payload) == ["p1", "p3", "p4"])
        #expect(tracker.isEmpty)
        // A reopened channel numbers from 1 again.
        tracker.track(1, "again")
        #expect(tracker.answer(upTo: 1, multiple: true, ack: true).map(\.payload) == ["again"])
    }

    @Test func manyPublishesAnsweredInWavesKeepTheCountRight() {
        var tracker = ConfirmTracker<UInt64>()
        var answered: [UInt64] = []
        var next: UInt64 = 1
        for wave in 0..<50 {
            for _ in 0..<100 {
                tracker.track(next, next)
                next += 1
            }
            // Every other number singly, out of order, then the rest with one multiple answer.
            let top = next - 1
            for number in stride(from: top, to: top - 100, by: -2) {
                answered += tracker.answer(upTo: number, multiple: false, ack: wave % 2 == 0).map(\.payload)
            }
            answered += tracker.answer(upTo: top, multiple: true, ack: true).map(\.payload)
            #expect(tracker.isEmpty)
        }
        #expect(answered.count == 5000)
        #expect(Set(answered).count == 5000)
    }
}
