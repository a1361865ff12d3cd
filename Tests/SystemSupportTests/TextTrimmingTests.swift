import SystemSupport
import XCTest

/// `trimmingWhitespace()` stands in for Foundation's `trimmingCharacters(in: .whitespacesAndNewlines)`
/// wherever camrec reads a line from outside (sysfs, /proc, a pid file, option lists).
final class TextTrimmingTests: XCTestCase {
    func testEndsLoseSpacesTabsAndLineBreaksOfEveryKind() {
        XCTAssertEqual("0x8086\n".trimmingWhitespace(), "0x8086")
        XCTAssertEqual("\t 4242\r\n".trimmingWhitespace(), "4242")
        XCTAssertEqual(" 640 ".trimmingWhitespace(), "640")
        XCTAssertEqual("camrec\u{2028}\u{00A0}".trimmingWhitespace(), "camrec")
    }

    func testWhatIsInsideStaysAndNothingButSpaceGivesEmpty() {
        XCTAssertEqual(" UVC Camera (046d:0825)\n".trimmingWhitespace(), "UVC Camera (046d:0825)")
        XCTAssertEqual(" \n\r\n\t".trimmingWhitespace(), "")
        XCTAssertEqual("".trimmingWhitespace(), "")
        XCTAssertEqual("x".trimmingWhitespace(), "x")
        XCTAssertEqual("a,b"[..."a,b".firstIndex(of: ",")!].trimmingWhitespace(), "a,")
    }
}
