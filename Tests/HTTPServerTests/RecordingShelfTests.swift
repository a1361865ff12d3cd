import Glibc
import Outputs
import XCTest

@testable import HTTPServer

final class RecordingShelfTests: XCTestCase {
    func testByteRanges() {
        XCTAssertEqual(RecordingShelf.byteRange("bytes=0-99", size: 1000).map { [$0.0, $0.1] }, [0, 99])
        XCTAssertEqual(RecordingShelf.byteRange("bytes=900-", size: 1000).map { [$0.0, $0.1] }, [900, 999])
        XCTAssertEqual(RecordingShelf.byteRange("bytes=-100", size: 1000).map { [$0.0, $0.1] }, [900, 999])
        XCTAssertEqual(RecordingShelf.byteRange("bytes=-5000", size: 1000).map { [$0.0, $0.1] }, [0, 999])
        XCTAssertEqual(RecordingShelf.byteRange("bytes=10-5000", size: 1000).map { [$0.0, $0.1] }, [10, 999])
        for refused in ["bytes=1000-", "bytes=5-4", "bytes=0-1,5-6", "items=0-1", "bytes=-0", "bytes=-", "bytes=a-b",
                        "bytes=99999999999999999999-"] {
            XCTAssertNil(RecordingShelf.byteRange(refused, size: 1000), refused)
        }
        XCTAssertNil(RecordingShelf.byteRange("bytes=0-0", size: 0))
    }

    func testPercentDecodingIsStrict() {
        XCTAssertEqual(RecordingShelf.percentDecoded("%2e%2E/x%2Fy"), "../x/y")
        XCTAssertEqual(RecordingShelf.percentDecoded("seg%201.mp4"), "seg 1.mp4")
        XCTAssertNil(RecordingShelf.percentDecoded("%zz"))
        XCTAssertNil(RecordingShelf.percentDecoded("abc%2"))
        XCTAssertNil(RecordingShelf.percentDecoded("%ff%fe"), "not UTF-8")
        XCTAssertEqual(RecordingShelf.percentEncoded("a b/ü\"<.mp4"), "a%20b/%C3%BC%22%3C.mp4")
        XCTAssertEqual(RecordingShelf.percentDecoded(Substring(RecordingShelf.percentEncoded("a b/ü\"<.mp4"))), "a b/ü\"<.mp4")
    }

    func testOnlyRegularFilesOfThePatternAreListedAndOpened() throws {
        let root = NSTemporaryDirectory() + "shelf-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(root, 0o755)
        mkdir(root + "/out", 0o755)
        defer { _ = try? FileManager.default.removeItem(atPath: root) }
        _ = FileManager.default.createFile(atPath: root + "/out/seg-1.mp4", contents: Data(repeating: 7, count: 1234))
        _ = FileManager.default.createFile(atPath: root + "/out/notes.txt", contents: Data("x".utf8))
        _ = FileManager.default.createFile(atPath: root + "/secret.mp4", contents: Data("secret".utf8))
        symlink("../secret.mp4", root + "/out/seg-2.mp4")
        mkfifo(root + "/out/seg-3.mp4", 0o644)
        let shelf = RecordingShelf(shelves: [.init(pattern: try OutputNamePattern(root + "/out/seg-{n}.mp4"), device: "cam",
                                                   finished: { [] })])
        let listed = shelf.list()
        XCTAssertEqual(listed.map(\.name), ["seg-1.mp4"])
        XCTAssertEqual(listed.first?.bytes, 1234)
        XCTAssertEqual(listed.first?.url, "/recordings/0/seg-1.mp4")
        XCTAssertEqual(listed.first?.playsInPage, true)
        let opened = try XCTUnwrap(shelf.open(shelfIndex: 0, name: "seg-1.mp4"))
        XCTAssertEqual(opened.bytes, 1234)
        close(opened.descriptor)
        for refused in ["seg-2.mp4", "seg-3.mp4", "notes.txt", "../secret.mp4", "/etc/passwd", "seg-1.mp4/", "./seg-1.mp4", ""] {
            XCTAssertNil(shelf.open(shelfIndex: 0, name: refused), refused)
        }
        XCTAssertNil(shelf.open(shelfIndex: 1, name: "seg-1.mp4"))
        XCTAssertNil(shelf.open(shelfIndex: -1, name: "seg-1.mp4"))
    }
}
