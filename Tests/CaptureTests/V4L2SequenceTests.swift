@testable import Capture
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
}
