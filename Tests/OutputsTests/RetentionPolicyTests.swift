import Foundation
import Outputs
import XCTest

final class RetentionPolicyTests: XCTestCase {
    func testKeepsTheNewestAndNeverTouchesOtherFiles() throws {
        let dir = NSTemporaryDirectory() + "camrec-retention-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pattern = try OutputNamePattern(dir + "/sub/cam-{n}.h264")
        for n in 1...5 {
            let path = "\(dir)/sub/cam-\(n).h264"
            _ = FileManager.default.createFile(atPath: path, contents: Data([0]))
            _ = FileManager.default.createFile(atPath: "\(dir)/sub/cam-\(n).pts", contents: Data([0]))
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: Double(n - 10) * 60)], ofItemAtPath: path)
        }
        for other in ["other-1.h264", "cam-1.mp4", "cam-x.h264"] {
            _ = FileManager.default.createFile(atPath: "\(dir)/sub/\(other)", contents: Data([0]))
        }
        let deleted = RetentionPolicy(maximumFiles: 3).apply(pattern: pattern, device: "d", current: "\(dir)/sub/cam-5.h264")
        // Three files on disk, counting the one being written: cam-3, cam-4 and cam-5.
        XCTAssertEqual(deleted.sorted(), ["\(dir)/sub/cam-1.h264", "\(dir)/sub/cam-2.h264"])
        let left = try FileManager.default.contentsOfDirectory(atPath: dir + "/sub").sorted()
        XCTAssertEqual(left, ["cam-1.mp4", "cam-3.h264", "cam-3.pts", "cam-4.h264", "cam-4.pts", "cam-5.h264", "cam-5.pts",
                              "cam-x.h264", "other-1.h264"])
    }

    func testAgeLimit() throws {
        let dir = NSTemporaryDirectory() + "camrec-retention-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pattern = try OutputNamePattern(dir + "/c-{n}.h264")
        for (n, age) in [(1, 7200.0), (2, 30.0)] {
            _ = FileManager.default.createFile(atPath: "\(dir)/c-\(n).h264", contents: Data([0]))
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -age)], ofItemAtPath: "\(dir)/c-\(n).h264")
        }
        let deleted = RetentionPolicy(maximumAgeSeconds: 3600).apply(pattern: pattern, device: "d", current: nil)
        XCTAssertEqual(deleted, ["\(dir)/c-1.h264"])
    }

    func testDurations() {
        XCTAssertEqual(RetentionPolicy.parseDuration("90s"), 90)
        XCTAssertEqual(RetentionPolicy.parseDuration("30m"), 1800)
        XCTAssertEqual(RetentionPolicy.parseDuration("12h"), 43_200)
        XCTAssertEqual(RetentionPolicy.parseDuration("7d"), 604_800)
        XCTAssertEqual(RetentionPolicy.parseDuration("3600"), 3600)
        for bad in ["", "d", "-5m", "x1h", "0"] { XCTAssertNil(RetentionPolicy.parseDuration(bad), bad) }
    }
}
