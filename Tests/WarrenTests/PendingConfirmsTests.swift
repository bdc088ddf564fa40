import Testing

@testable import Warren

@Suite("PendingConfirms")
struct PendingConfirmsTests {
    private static func settlement(_ tag: UInt64, waitingFor count: Int = 1) -> Settlement {
        Settlement(deliveryTag: tag, action: .ack, unconfirmed: count)
    }

    @Test func aMultipleConfirmTakesEveryNumberUpToItsTagInOrder() {
        var pending = PendingConfirms()
        for number in UInt64(1)...4 { pending.append(Self.settlement(number * 10), awaiting: number) }
        #expect(pending.confirmed(upTo: 2, multiple: true).map(\.settlement.deliveryTag) == [10, 20])
        #expect(pending.confirmed(upTo: 2, multiple: true).isEmpty, "already taken")
        #expect(pending.confirmed(upTo: 9, multiple: true).map(\.settlement.deliveryTag) == [30, 40])
        #expect(pending.isEmpty)
    }

    @Test func aSingleConfirmTakesOnlyItsNumberWhereverItIs() {
        var pending = PendingConfirms()
        for number in UInt64(1)...3 { pending.append(Self.settlement(number * 10), awaiting: number) }
        #expect(pending.confirmed(upTo: 2, multiple: false).map(\.settlement.deliveryTag) == [20])
        #expect(pending.confirmed(upTo: 7, multiple: false).isEmpty, "7 was never published")
        #expect(pending.confirmed(upTo: 3, multiple: true).map(\.settlement.deliveryTag) == [10, 30])
    }

    @Test func aSettlementWaitingForTwoPublishesComesBackForEach() {
        var pending = PendingConfirms()
        let failed = Self.settlement(1, waitingFor: 2)
        pending.append(failed, awaiting: 5)
        pending.append(failed, awaiting: 6)
        pending.append(Self.settlement(2), awaiting: 7)
        let answered = pending.confirmed(upTo: 6, multiple: true)
        #expect(answered.map(\.number) == [5, 6] && answered.allSatisfy { $0.settlement === failed })
    }

    @Test func aNumberAppendedOutOfOrderIsStillTakenInOrder() {
        var pending = PendingConfirms()
        pending.append(Self.settlement(30), awaiting: 3)
        pending.append(Self.settlement(10), awaiting: 1)
        pending.append(Self.settlement(20), awaiting: 2)
        #expect(pending.confirmed(upTo: 2, multiple: true).map(\.settlement.deliveryTag) == [10, 20])
        #expect(pending.removeAll().map(\.deliveryTag) == [30])
        #expect(pending.isEmpty)
    }
}
