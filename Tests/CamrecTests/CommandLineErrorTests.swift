import Foundation
import XCTest

/// Bad input: one clear line, a documented exit status, and no stray file.
final class CommandLineErrorTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try makeScratchDirectory()
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func expectFailure(_ arguments: [String], status: Int32, mentioning text: String,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try Tools.camrec(arguments, cwd: dir)
        XCTAssertEqual(r.status, status, r.stderr, file: file, line: line)
        let lines = r.stderr.split(separator: "\n").filter { !$0.hasPrefix("camrec: encoding in") }
        XCTAssertEqual(lines.count, 1, "one line: \(r.stderr)", file: file, line: line)
        XCTAssertTrue(lines.first?.hasPrefix("camrec: error: ") == true, r.stderr, file: file, line: line)
        XCTAssertTrue(r.stderr.localizedCaseInsensitiveContains(text), "\(r.stderr) should mention \(text)", file: file, line: line)
        let left = (try FileManager.default.contentsOfDirectory(atPath: dir)).filter { !$0.hasPrefix("keep") }
        XCTAssertEqual(left, [], "nothing created", file: file, line: line)
    }

    func testUnknownFlag() throws {
        try expectFailure(["--test-pattern", "--no-such-flag", "out.h264"], status: 64, mentioning: "--no-such-flag")
    }

    func testMalformedSize() throws {
        try expectFailure(["--test-pattern", "--size", "12x", "out.h264"], status: 64, mentioning: "size")
    }

    func testOddSizeIsRefusedWithTheNearestEvenSizes() throws {
        try expectFailure(["--test-pattern", "--size", "641x481", "out.h264"], status: 64, mentioning: "640x480")
    }

    func testH265SettingsAreRefusedInItsOwnTerms() throws {
        try expectFailure(["--test-pattern", "--codec", "hevc", "--size", "641x360", "out.h265"], status: 64, mentioning: "H.265/HEVC (4:2:0) needs an even width")
        try expectFailure(["--test-pattern", "--codec", "hevc", "--threads", "17", "out.h265"], status: 64,
                          mentioning: "libx265 runs at most 16 frame threads")
    }

    func testMissingOutput() throws {
        try expectFailure(["--test-pattern", "--frames", "3"], status: 64, mentioning: "output")
    }

    func testMissingInputFile() throws {
        try expectFailure(["--input", "no-such.yuv", "--size", "64x64", "out.h264"], status: 66, mentioning: "no-such.yuv")
    }

    /// A frame rate so low that its thousandths round to 0 trapped in the encoder's timestamps.
    func testFrameRatesOutsideTheirRangeAreUsageErrors() throws {
        for fps in ["1e-9", "0.0004", "0", "-1", "nan", "inf", "241"] {
            try expectFailure(["--test-pattern", "--frames", "2", "--fps", fps, "out.h264"], status: 64, mentioning: "--fps must be at least 0.001")
        }
    }

    func testInputShorterThanOneFrame() throws {
        _ = FileManager.default.createFile(atPath: "\(dir)/keep-short.yuv", contents: Data(count: 1000))
        try expectFailure(["--input", "keep-short.yuv", "--size", "64x64", "out.h264"], status: 65, mentioning: "less than one")
    }

    func testOutputDirectoryThatIsAFile() throws {
        _ = FileManager.default.createFile(atPath: "\(dir)/keep-file", contents: Data("x".utf8))
        try expectFailure(["--test-pattern", "--frames", "3", "keep-file/out.h264"], status: 75, mentioning: "keep-file")
    }

    func testReadOnlyOutputDirectory() throws {
        // Root ignores directory permissions, so use a place no one may write: /proc.
        try expectFailure(["--test-pattern", "--frames", "3", "/proc/out.h264"], status: 75, mentioning: "/proc")
    }

    func testExistingOutputIsNotOverwritten() throws {
        _ = FileManager.default.createFile(atPath: "\(dir)/keep.h264", contents: Data("precious".utf8))
        try expectFailure(["--test-pattern", "--frames", "3", "keep.h264"], status: 76, mentioning: "--overwrite")
        XCTAssertEqual(try String(contentsOfFile: "\(dir)/keep.h264", encoding: .utf8), "precious")
    }

    func testOverwriteReplacesAnExistingFile() throws {
        try requireFFmpeg()
        _ = FileManager.default.createFile(atPath: "\(dir)/keep.h264", contents: Data("old".utf8))
        let r = try Tools.camrec(["--test-pattern", "--size", "320x240", "--frames", "5", "--overwrite", "keep.h264"], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try Tools.decodedFrameCount("\(dir)/keep.h264"), 5)
    }

    func testHelpListsExitStatuses() throws {
        let r = try Tools.camrec(["--help"])
        XCTAssertEqual(r.status, 0)
        for code in ["64", "66", "70", "71", "73", "75", "77"] {
            XCTAssertTrue(r.stdoutText.contains("  \(code)  "), "exit status \(code) is documented")
        }
    }

    /// `--version`: the commit git says this checkout is at, and the libraries ffmpeg, ldd and ldconfig name.
    func testVersionNamesTheCommitItWasBuiltFromAndTheLibrariesItRunsWith() throws {
        let r = try Tools.camrec(["--version"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdoutText.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, r.stdoutText)
        let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let head = try Tools.run("git", ["-C", checkout, "rev-parse", "--short=12", "HEAD"]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(head.count, 12, "git names this checkout's commit")
        XCTAssertTrue(lines.first?.hasPrefix("camrec 0.1.0 (commit \(head)") == true, "\(lines.first ?? "") built from \(head)")
        // ffmpeg -version: "libavcodec     59. 37.100 / 59. 37.100" (built against / running with).
        let ffmpeg = try Tools.run("ffmpeg", ["-hide_banner", "-version"]).stdoutText
        for library in ["libavcodec", "libavformat", "libavutil"] {
            let row = try XCTUnwrap(ffmpeg.split(separator: "\n").first { $0.hasPrefix(library + " ") }, ffmpeg)
            let running = row.split(separator: "/").last.map { $0.replacingOccurrences(of: " ", with: "") } ?? "?"
            XCTAssertTrue(lines.count > 1 && lines[1].contains("\(library) \(running)"), "\(library) \(running) in \(lines)")
        }
        // The file each soname resolves to is the one loaded: libx264 is linked, so ldd names it
        // ("libx264.so.164 => /lib/x86_64-linux-gnu/libx264.so.164 (0x…)"); libva is opened on first use
        // (with libavutil, which needs it), so the dynamic linker's cache names it
        // ("\tlibva.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libva.so.2").
        let linked = try Tools.run("ldd", [Tools.camrec]).stdoutText.split(separator: "\n")
        let cache = try Tools.run("/sbin/ldconfig", ["-p"]).stdoutText.split(separator: "\n")
        // The cache also lists other architectures' copies: this machine's is x86-64.
        for (soname, rows, architecture) in [("libx264.so.", linked, ""), ("libva.so.", cache, "x86-64")] {
            let row = try XCTUnwrap(rows.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(soname) && (architecture.isEmpty || $0.contains(architecture)) },
                                    "\(soname) in ldd or ldconfig -p")
            let path = try XCTUnwrap(row.components(separatedBy: "=> ").last?.split(separator: " ").first.map(String.init), String(row))
            let file = URL(fileURLWithPath: path).resolvingSymlinksInPath().lastPathComponent
            XCTAssertTrue(lines.count > 2 && lines[2].contains("(\(file))"), "\(file) in \(lines)")
        }
    }

    func testInspectRejectsAFileWithoutH264() throws {
        _ = FileManager.default.createFile(atPath: "\(dir)/keep-garbage.bin", contents: Data(repeating: 0x55, count: 4096))
        let r = try Tools.camrec(["inspect", "keep-garbage.bin"], cwd: dir)
        XCTAssertEqual(r.status, 65, r.stderr)
    }

    func testInspectFlagsThreeByteStartCodes() throws {
        // SPS, PPS, IDR with 3-byte start codes: the contract is broken and inspect says so.
        let sps: [UInt8] = [0x67, 0x42, 0xc0, 0x1e, 0xda, 0x02, 0x80, 0xbf, 0xe5, 0xc0, 0x44, 0x00, 0x00, 0x03, 0x00, 0x04,
                            0x00, 0x00, 0x03, 0x00, 0xf0, 0x3c, 0x58, 0xba, 0x80]
        let pps: [UInt8] = [0x68, 0xce, 0x0f, 0x2c, 0x80]
        let idr: [UInt8] = [0x65, 0x88, 0x84, 0x00, 0x33, 0xff]
        var stream: [UInt8] = []
        for unit in [sps, pps, idr] { stream += [0, 0, 1] + unit }
        _ = FileManager.default.createFile(atPath: "\(dir)/keep-3byte.h264", contents: Data(stream))
        let r = try Tools.camrec(["inspect", "keep-3byte.h264"], cwd: dir)
        XCTAssertEqual(r.status, 1, r.stdoutText + r.stderr)
        XCTAssertTrue(r.stdoutText.contains("BROKEN"), r.stdoutText)
    }
}
