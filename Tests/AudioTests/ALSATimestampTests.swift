import Glibc
import XCTest

@testable import Audio

/// A block's time comes from the driver's timestamp, outside data: one that cannot be right is not
/// used (the read's own time stands in), and nothing in it can trap.
final class ALSATimestampTests: XCTestCase {
    func testOnlyAPlausibleHardwareTimestampIsUsed() {
        let now: UInt64 = 5_000_000_000_000  // 5000 s after boot
        func stamp(_ seconds: Int, _ nanoseconds: Int) -> timespec { timespec(tv_sec: seconds, tv_nsec: nanoseconds) }
        XCTAssertEqual(ALSACapture.newestSampleTime(stamp(4999, 250_000_000), now: now), 4_999_250_000_000)
        XCTAssertEqual(ALSACapture.newestSampleTime(stamp(5000, 900_000_000), now: now), 5_000_900_000_000, "within a second ahead: clocks read apart")
        XCTAssertNil(ALSACapture.newestSampleTime(stamp(0, 0), now: now), "no timestamp")
        XCTAssertNil(ALSACapture.newestSampleTime(stamp(5002, 0), now: now), "later than a second after now")
        XCTAssertNil(ALSACapture.newestSampleTime(stamp(5001, 500_000_000), now: now), "1.5 s after now")
        XCTAssertNil(ALSACapture.newestSampleTime(stamp(-1, 0), now: now), "negative")
        XCTAssertNil(ALSACapture.newestSampleTime(stamp(10, -5), now: now), "negative nanoseconds")
        XCTAssertNil(ALSACapture.newestSampleTime(stamp(10, 1_000_000_000), now: now), "nanoseconds out of range")
        XCTAssertNil(ALSACapture.newestSampleTime(stamp(.max, 999_999_999), now: now), "would overflow")
        XCTAssertNil(ALSACapture.newestSampleTime(stamp(.min, 0), now: .max), "the most negative")
        XCTAssertEqual(ALSACapture.newestSampleTime(stamp(Int(UInt64.max / 1_000_000_000), 0), now: .max),
                       UInt64.max / 1_000_000_000 * 1_000_000_000, "the largest time that fits")
    }
}
