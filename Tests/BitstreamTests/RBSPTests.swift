import XCTest
@testable import Bitstream

final class RBSPTests: XCTestCase {
    func testRemovingEmulationPrevention() {
        XCTAssertEqual(RBSP.removingEmulationPrevention(hex("000003 00")), hex("0000 00"))
        XCTAssertEqual(RBSP.removingEmulationPrevention(hex("000003 01 000003 02 000003 03")), hex("000001 000002 000003"))
        // A 03 after a removed 03 is data again: only one is dropped per zero pair.
        XCTAssertEqual(RBSP.removingEmulationPrevention(hex("000003 03")), hex("0000 03"))
        // At the very end (after a cabac_zero_word).
        XCTAssertEqual(RBSP.removingEmulationPrevention(hex("aa 000003")), hex("aa 0000"))
        // 00 00 03 followed by 04 or more: the encoder never inserts that, but readers drop it.
        XCTAssertEqual(RBSP.removingEmulationPrevention(hex("000003 04")), hex("0000 04"))
        // Not preceded by two zeros: kept.
        XCTAssertEqual(RBSP.removingEmulationPrevention(hex("00 03 0003 01")), hex("00 03 0003 01"))
        XCTAssertEqual(RBSP.removingEmulationPrevention([]), [])
    }

    func testAddingEmulationPrevention() {
        XCTAssertEqual(RBSP.addingEmulationPrevention(hex("000000")), hex("000003 00"))
        XCTAssertEqual(RBSP.addingEmulationPrevention(hex("000001 000002 000003")), hex("00000301 00000302 00000303"))
        XCTAssertEqual(RBSP.addingEmulationPrevention(hex("0000 04")), hex("0000 04"))
        XCTAssertEqual(RBSP.addingEmulationPrevention(hex("aa 0000")), hex("aa 000003"))
        XCTAssertEqual(RBSP.addingEmulationPrevention(hex("00000000")), hex("000003 0000 03"))
    }

    func testRoundTripOnRandomData() {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<500 {
            // Bias towards zeros and small values, where the escaping happens.
            let data = (0..<Int.random(in: 0...64, using: &generator)).map { _ in
                Bool.random(using: &generator) ? 0 : UInt8.random(in: 0...4, using: &generator)
            }
            let escaped = RBSP.addingEmulationPrevention(data)
            XCTAssertEqual(RBSP.removingEmulationPrevention(escaped), data)
            // No start code prefix may remain inside the escaped payload.
            for index in 0..<max(0, escaped.count - 2) {
                XCTAssertFalse(escaped[index] == 0 && escaped[index + 1] == 0 && escaped[index + 2] <= 2, "\(escaped)")
            }
        }
    }
}
