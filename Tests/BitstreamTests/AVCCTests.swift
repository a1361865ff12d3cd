import XCTest
@testable import Bitstream

final class AVCCTests: XCTestCase {
    func testRoundTrip() throws {
        let annexB = hex("00000001 6742c0 000001 68ce 000001 6588 000000 01 419a")
        let avcc = AVCC.avcc(fromAnnexB: annexB)
        XCTAssertEqual(avcc, hex("00000003 6742c0 00000002 68ce 00000002 6588 00000002 419a"))
        let back = try AVCC.annexB(fromAVCC: avcc)
        XCTAssertEqual(back, hex("00000001 6742c0 00000001 68ce 00000001 6588 00000001 419a"))
        XCTAssertEqual(AVCC.avcc(fromAnnexB: back), avcc)
        let units = try AVCC.units(inAVCC: avcc)
        XCTAssertEqual(units.map(\.offset), [0, 7, 13, 19])
        XCTAssertEqual(units.map(\.startCodeLength), [0, 0, 0, 0])
    }

    func testShortLengthFields() throws {
        XCTAssertEqual(try AVCC.annexB(fromAVCC: hex("02 6742 01 68"), lengthSize: 1), hex("00000001 6742 00000001 68"))
        XCTAssertEqual(try AVCC.annexB(fromAVCC: hex("0002 6742 0000 0001 68"), lengthSize: 2), hex("00000001 6742 00000001 68"))
        XCTAssertEqual(try AVCC.annexB(fromAVCC: []), [])
    }

    func testMalformedLengthsThrow() {
        XCTAssertThrowsError(try AVCC.annexB(fromAVCC: hex("00000005 6742"))) {
            XCTAssertEqual($0 as? AVCC.FormatError, .lengthExceedsData(offset: 0, length: 5, available: 2))
        }
        XCTAssertThrowsError(try AVCC.annexB(fromAVCC: hex("00000001 67 0000"))) {
            XCTAssertEqual($0 as? AVCC.FormatError, .truncatedLength(offset: 5))
        }
        XCTAssertThrowsError(try AVCC.annexB(fromAVCC: hex("ffffffff 67"))) {
            XCTAssertEqual($0 as? AVCC.FormatError, .lengthExceedsData(offset: 0, length: 0xFFFF_FFFF, available: 1))
        }
        XCTAssertThrowsError(try AVCC.annexB(fromAVCC: hex("01 67"), lengthSize: 3)) {
            XCTAssertEqual($0 as? AVCC.FormatError, .invalidLengthSize(3))
        }
    }
}
