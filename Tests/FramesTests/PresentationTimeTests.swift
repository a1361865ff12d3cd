import Frames
import XCTest

/// Frame timestamps from a rational rate: exact against a 128-bit reference, and no overflow where the
/// plain product overflowed (18.5 million frames, a week at 30000/1001, trapped).
final class PresentationTimeTests: XCTestCase {
    func testExactAndWithoutOverflowFarPastAWeekOfFrames() {
        let rates: [(Int32, Int32)] = [(30, 1), (30000, 1001), (7500, 1000), (60000, 1001), (1, 1)]
        for (numerator, denominator) in rates {
            for sequence: UInt64 in [0, 1, 29, 30, 270, 1_000_003, 18_500_000, 100_000_000, 10_000_000_000] {
                let product = sequence.multipliedFullWidth(by: 1_000_000_000 * UInt64(denominator))
                let reference = UInt64(numerator).dividingFullWidth(product).quotient
                XCTAssertEqual(presentationTime(of: sequence, rate: (numerator, denominator)), reference,
                               "frame \(sequence) at \(numerator)/\(denominator)")
            }
        }
        XCTAssertEqual(presentationTime(of: 270, rate: (30, 1)), 9_000_000_000, "frame 270 at 30 fps is 9 s")
    }
}
