import Frames
import Foundation
import Glibc
import Threading
import Synchronization
import XCTest

final class LatchTests: XCTestCase {
    func testAWaitWithADeadlineEndsAtItWhenNothingOpensTheLatch() {
        let latch = Latch()
        let start = MonotonicClock.now()
        XCTAssertFalse(latch.wait(nanoseconds: 200_000_000))
        let waited = MonotonicClock.now() - start
        XCTAssertGreaterThanOrEqual(waited, 200_000_000)
        XCTAssertFalse(latch.isSet)
    }

    func testOpeningWakesEveryWaiterAtOnce() {
        let latch = Latch()
        let woke = ArrivalCounter(count: 3)
        for _ in 0..<3 {
            Thread.detachNewThread {
                latch.wait()
                woke.arrive()
            }
        }
        usleep(50_000)
        let opened = MonotonicClock.now()
        latch.open()
        XCTAssertTrue(woke.waitAll(nanoseconds: 5_000_000_000), "a waiter was not woken")
        // Woken by the open, not by a slice of sleep: well under a second on the busiest machine.
        XCTAssertLessThan(MonotonicClock.now() - opened, 1_000_000_000)
        XCTAssertTrue(latch.wait(nanoseconds: 0), "an open latch answers at once")
    }

    func testAWakeGivenBeforeTheWaitIsKeptAndTakenOnce() {
        let signal = WakeSignal()
        signal.wake()
        signal.wake()
        XCTAssertTrue(signal.wait(nanoseconds: 0), "a wake given while nobody waited was lost")
        XCTAssertFalse(signal.wait(nanoseconds: 100_000_000), "two wakes before a wait are one change to look at")
    }

    func testAWakeEndsAWaitingThreadsWaitAtOnce() {
        let signal = WakeSignal()
        let returned = Latch()
        Thread.detachNewThread {
            signal.wait()
            returned.open()
        }
        usleep(50_000)
        XCTAssertFalse(returned.isSet)
        signal.wake()
        XCTAssertTrue(returned.wait(nanoseconds: 5_000_000_000))
    }

    /// pthread_cond_timedwait measures against the clock the condition was made with; the deadline
    /// must be on that same clock (monotonic), or a wait would end at once or a day late.
    func testQueueLockDeadlinesAreOnTheMonotonicClock() {
        var monotonic = timespec()
        clock_gettime(CLOCK_MONOTONIC, &monotonic)
        let deadline = QueueLock.deadline(afterNanoseconds: 1_000_000_000)
        let ahead = (deadline.tv_sec - monotonic.tv_sec) * 1_000_000_000 + (deadline.tv_nsec - monotonic.tv_nsec)
        XCTAssertGreaterThanOrEqual(ahead, 1_000_000_000)
        XCTAssertLessThan(ahead, 2_000_000_000)
    }
}

/// Counts arrivals of threads and waits for all of them.
private final class ArrivalCounter: Sendable {
    private let remaining: Atomic<Int>
    private let done = Latch()
    init(count: Int) { remaining = Atomic(count) }
    func arrive() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.open() }
    }
    func waitAll(nanoseconds: UInt64) -> Bool { done.wait(nanoseconds: nanoseconds) }
}
