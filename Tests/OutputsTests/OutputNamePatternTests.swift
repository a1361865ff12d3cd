import Glibc
import Outputs
import XCTest

final class OutputNamePatternTests: XCTestCase {
    /// 2026-03-04 05:06:07 UTC.
    let time: time_t = 1_772_600_767

    override func setUp() {
        setenv("TZ", "UTC", 1)
        tzset()
    }

    func testRendersStrftimeFieldsAndPlaceholders() throws {
        let pattern = try OutputNamePattern("/srv/%Y/%m/%d/{device}-%H%M%S-{n}.h264")
        XCTAssertEqual(pattern.render(time: time, segment: 12, device: "usb-cam"), "/srv/2026/03/04/usb-cam-050607-12.h264")
        XCTAssertEqual(try OutputNamePattern("%F_%T.h264").render(time: time, segment: 1, device: "x"), "2026-03-04_05:06:07.h264")
        XCTAssertEqual(try OutputNamePattern("100%%-{n}.h264").render(time: time, segment: 3, device: "x"), "100%-3.h264")
        XCTAssertTrue(try OutputNamePattern("a-{n}.h264").hasPlaceholders)
        XCTAssertFalse(try OutputNamePattern("plain.h264").hasPlaceholders)
    }

    func testRejectsUnsupportedFields() {
        XCTAssertThrowsError(try OutputNamePattern("cam-%q.h264"))
        XCTAssertThrowsError(try OutputNamePattern("cam-%"))
    }

    func testMatchesOnlyItsOwnNames() throws {
        let pattern = try OutputNamePattern("rec/%Y-%m-%d/cam-{device}-%H%M%S-{n}.h264")
        let own = pattern.render(time: time, segment: 7, device: "video0")
        XCTAssertTrue(pattern.matches(own, device: "video0"))
        XCTAssertTrue(pattern.matches(OutputNamePattern.alternative(to: own, attempt: 2), device: "video0"), "clash names are ours too")
        for other in ["rec/2026-03-04/cam-video1-050607-7.h264", "rec/2026-03-04/cam-video0-050607-7.mp4",
                      "rec/2026-03-04/cam-video0-0506-7.h264", "rec/2026-03-04/notes.txt", "rec/2026-3-04/cam-video0-050607-7.h264",
                      "rec/2026-03-04/cam-video0-050607-.h264", "rec/2026-03-04/cam-video0-050607-7.h264.partial"] {
            XCTAssertFalse(pattern.matches(other, device: "video0"), other)
        }
        XCTAssertEqual(pattern.fixedDirectory, "rec")
    }

    func testAlternativeNames() {
        XCTAssertEqual(OutputNamePattern.alternative(to: "/a/b/cam.h264", attempt: 2), "/a/b/cam-2.h264")
        XCTAssertEqual(OutputNamePattern.alternative(to: "cam", attempt: 3), "cam-3")
        XCTAssertEqual(OutputNamePattern.alternative(to: "dir.d/cam", attempt: 2), "dir.d/cam-2")
    }
}
