import Testing

@testable import Warren

@Suite("Scheduled jobs: hops through the delay queues")
struct ScheduleHopTests {
    @Test(arguments: [
        (1, 1), (999, 999), (1_000, 1_000), (1_999, 1_000), (3_000, 2_000), (511_999, 256_000), (512_000, 512_000),
        (32_767_999, 16_384_000), (32_768_000, 32_768_000), (86_400_000, 32_768_000),
    ])
    func eachHopIsTheLongestDelayQueueThatDoesNotPassTheTime(_ left: Int, _ hop: Int) {
        #expect(DelayQueues.hop(milliseconds: left) == hop)
    }

    @Test func aHopWaitsAtLeastAMillisecond() {
        #expect(DelayQueues.hop(milliseconds: 0) == 1)
    }

    @Test func theHopsAddUpToTheTimeLeft() {
        var left = 86_400_123
        var hops: [Int] = []
        while left > 0 {
            hops.append(DelayQueues.hop(milliseconds: left))
            left -= hops.last!
        }
        #expect(hops == [32_768_000, 32_768_000, 16_384_000, 4_096_000, 256_000, 128_000, 123])
    }
}
