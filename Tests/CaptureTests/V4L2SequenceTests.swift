@testable import Capture
import CV4L2
import Frames
import XCTest

final class V4L2SequenceTests: XCTestCase {
    func testGapsAreCountedAsDrops() {
        var t = SequenceTracker()
        XCTAssertEqual(t.record(100), 0)
        XCTAssertEqual(t.record(101), 0)
        XCTAssertEqual(t.record(105), 3)
        XCTAssertEqual(t.extended, 5)
    }

    func testWrapOf32BitSequenceIsOneStep() {
        var t = SequenceTracker()
        _ = t.record(0xFFFF_FFFE)
        XCTAssertEqual(t.record(0xFFFF_FFFF), 0)
        XCTAssertEqual(t.record(0), 0)
        XCTAssertEqual(t.record(2), 1)
        XCTAssertEqual(t.extended, 4)
        XCTAssertEqual(t.wraps, 1)
    }

    func testDriversThatDoNotCountOrRestartReportNoGap() {
        var t = SequenceTracker()
        _ = t.record(0)
        XCTAssertEqual(t.record(0), 0)
        _ = t.record(50)
        XCTAssertEqual(t.record(3), 0, "a jump backwards is a restart, not four billion drops")
        XCTAssertEqual(t.wraps, 0, "a restart is no wrap")
    }

    func testPresentationTimeIsCaptureTimeSinceTheFirstFrame() {
        var c = PresentationClock(nominalInterval: 40_000_000)
        XCTAssertEqual(c.presentationTime(capturedAt: 5_000_000_000), 0)
        XCTAssertEqual(c.presentationTime(capturedAt: 5_040_000_000), 40_000_000)
        XCTAssertEqual(c.presentationTime(capturedAt: 5_120_000_000), 120_000_000, "a dropped frame leaves a gap in time")
    }

    func testAClockThatJumpsBackOrFarAheadAdvancesByOneInterval() {
        var c = PresentationClock(nominalInterval: 40_000_000)
        _ = c.presentationTime(capturedAt: UInt64.max - 10_000_000)
        XCTAssertEqual(c.presentationTime(capturedAt: 30_000_000), 40_000_000, "wrapped timestamp")
        XCTAssertEqual(c.presentationTime(capturedAt: 70_000_000), 80_000_000)
        XCTAssertEqual(c.presentationTime(capturedAt: 70_000_000 + 3_600_000_000_000), 120_000_000)
    }
    // v4l2loopback 0.12.7's buffer flags: stamped with CLOCK_MONOTONIC, the type left UNKNOWN (0).
    private let unknownType = V4L2BufferFlags(rawValue: 0)

    func testAMonotonicStampIsTheCaptureTimeAndNoneIsTheDequeueTime() {
        var c = CaptureTimeChoice()
        let monotonic = V4L2BufferFlags.timestampMonotonic
        XCTAssertEqual(c.captureTime(stamp: 9_960_000_000, flags: monotonic, dequeuedAt: 10_000_000_000), 9_960_000_000)
        XCTAssertEqual(c.captureTime(stamp: 0, flags: monotonic, dequeuedAt: 10_100_000_000), 10_100_000_000)
        let copied = V4L2BufferFlags(rawValue: UInt32(V4L2_BUF_FLAG_TIMESTAMP_COPY))
        XCTAssertEqual(c.captureTime(stamp: 9_960_000_000, flags: copied, dequeuedAt: 10_000_000_000), 10_000_000_000,
                       "a copied stamp is whatever the writer put there")
    }

    func testAnUnknownStampPlausibleAsMonotonicIsTakenForTheWholeStream() {
        var c = CaptureTimeChoice()
        XCTAssertEqual(c.captureTime(stamp: 9_990_000_000, flags: unknownType, dequeuedAt: 10_000_000_000), 9_990_000_000)
        XCTAssertEqual(c.unknownStamps, .driver)
        XCTAssertEqual(c.captureTime(stamp: 10_056_000_000, flags: unknownType, dequeuedAt: 10_130_000_000), 10_056_000_000,
                       "a frame dequeued 74 ms late keeps the time the driver stamped")
        XCTAssertEqual(c.captureTime(stamp: 12_000_000_000, flags: unknownType, dequeuedAt: 10_200_000_000), 10_200_000_000,
                       "no frame is captured after it was dequeued")
        XCTAssertEqual(c.captureTime(stamp: 0, flags: unknownType, dequeuedAt: 10_240_000_000), 10_240_000_000,
                       "a frame the driver left unstamped takes its dequeue time, not 0")
    }

    func testAnUnknownStampOfAnotherClockLeavesTheDequeueTimeForTheWholeStream() {
        for first in [UInt64(40_000_000), 8_900_000_000, 10_000_000_001, 0] {
            var c = CaptureTimeChoice()
            XCTAssertEqual(c.captureTime(stamp: first, flags: unknownType, dequeuedAt: 10_000_000_000), 10_000_000_000, "first stamp \(first)")
            XCTAssertEqual(c.unknownStamps, .dequeue, "first stamp \(first)")
            XCTAssertEqual(c.captureTime(stamp: 10_090_000_000, flags: unknownType, dequeuedAt: 10_100_000_000), 10_100_000_000,
                           "a plausible stamp later does not mix a second clock into the stream (first \(first))")
        }
    }
}
