import Foundation
import SystemSupport
import XCTest

/// The one copy of what camrec's logs, file names and device lookups each wrote for themselves:
/// decimals, `host:port`, text out of C buffers, and reads of directories and procfs-like files.
final class SystemTextTests: XCTestCase {
    func testDecimalsRoundHalvesAwayFromZeroAndKeepEveryPlace() {
        XCTAssertEqual(1.5.decimalText(places: 2), "1.50")
        XCTAssertEqual(0.125.decimalText(places: 2), "0.13")
        XCTAssertEqual((-0.25).decimalText(places: 1), "-0.3")
        XCTAssertEqual((-1.25).decimalText(places: 1), "-1.3")
        XCTAssertEqual((-0.04).decimalText(places: 1), "0.0")
        XCTAssertEqual(2.5.decimalText(places: 0), "3")
        XCTAssertEqual(1234.5678.decimalText(places: 3), "1234.568")
        XCTAssertEqual(Double.nan.decimalText(places: 3), "nan")
        XCTAssertEqual((-Double.infinity).decimalText(places: 1), "-inf")
    }

    func testTrimmedDecimalsDropTrailingZerosAndALonePoint() {
        XCTAssertEqual(30.0.decimalText(places: 3, trimmingZeros: true), "30")
        XCTAssertEqual(29.970.decimalText(places: 3, trimmingZeros: true), "29.97")
        XCTAssertEqual((-0.5).decimalText(places: 2, trimmingZeros: true), "-0.5")
        XCTAssertEqual(0.0004.decimalText(places: 3, trimmingZeros: true), "0")
    }

    func testWholeCountsOfSmallUnitsAreExact() {
        XCTAssertEqual(UInt64(1_234_567).decimalText(places: 3), "1234.567")
        XCTAssertEqual(UInt64(5).decimalText(places: 3), "0.005")
        XCTAssertEqual(0.decimalText(places: 3), "0.000")
        XCTAssertEqual((-1500).decimalText(places: 3), "-1.500")
        XCTAssertEqual(1500.decimalText(places: 3, trimmingZeros: true), "1.5")
        XCTAssertEqual(42.decimalText(places: 0), "42")
        // Beyond what a Double holds exactly (2^53).
        XCTAssertEqual(UInt64.max.decimalText(places: 3), "18446744073709551.615")
    }

    func testHostAndPortPutsIPv6InBracketsAndLeavesAnEmptyHostEmpty() {
        XCTAssertEqual(hostAndPort("127.0.0.1", 9982), "127.0.0.1:9982")
        XCTAssertEqual(hostAndPort("::1", UInt16(9982)), "[::1]:9982")
        XCTAssertEqual(hostAndPort("fe80::1%lo", 8554), "[fe80::1%lo]:8554")
        XCTAssertEqual(hostAndPort("camera.local", 554), "camera.local:554")
        XCTAssertEqual(hostAndPort(nil, 8080), ":8080")
    }

    func testCTextEndsAtTheFirstNulAndRepairsWhatIsNotUTF8() {
        let bytes: [UInt8] = [0x63, 0x61, 0x6D, 0, 0x78, 0x79]
        XCTAssertEqual(String(cBuffer: bytes.map { CChar(bitPattern: $0) }), "cam")
        XCTAssertEqual(String(cBuffer: "rec".utf8.map { CChar(bitPattern: $0) }), "rec")
        XCTAssertEqual(String(cBuffer: [CChar(bitPattern: 0xFF), 0x41, 0]), "\u{FFFD}A")
        XCTAssertEqual(String(cBuffer: [CChar]()), "")
        let tuple: (CChar, CChar, CChar, CChar, CChar) = (0x76, 0x69, 0x64, 0, 0x7A)
        XCTAssertEqual(String(cArray: tuple), "vid")
    }

    func testDirectoriesFilesAndLinksReadAsTheyAre() throws {
        let root = NSTemporaryDirectory() + "camrec-system-files-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/folder", withIntermediateDirectories: true)
        try "first\n\nsecond\r\n".write(toFile: root + "/lines", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: "lines")

        XCTAssertEqual(SystemFiles.entries(of: root).sorted(), ["folder", "lines", "link"])
        XCTAssertEqual(SystemFiles.directoryEntries(of: root).filter(\.isDirectory).map(\.name), ["folder"])
        XCTAssertEqual(SystemFiles.entries(of: root + "/missing"), [])
        XCTAssertEqual(SystemFiles.lines(of: root + "/lines"), ["first", "second"])
        XCTAssertEqual(SystemFiles.text(of: root + "/lines", limit: 3), "fir")
        XCTAssertEqual(SystemFiles.firstLine(of: root + "/link"), "first")
        XCTAssertEqual(SystemFiles.linkTarget(root + "/link"), "lines")
        XCTAssertNil(SystemFiles.linkTarget(root + "/lines"))
        XCTAssertEqual(SystemFiles.resolved(root + "/link"), SystemFiles.resolved(root)! + "/lines")
        XCTAssertNil(SystemFiles.text(of: root + "/missing"))
        // procfs reports a size of 0: read to the end all the same.
        XCTAssertEqual(SystemFiles.text(of: "/proc/self/comm", limit: 64)?.isEmpty, false)
    }
}
