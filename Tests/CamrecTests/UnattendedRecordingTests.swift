import Capture
import Foundation
import XCTest

/// Segments, rotation, retention, a full disk and name clashes, as cron and systemd users meet them.
final class UnattendedRecordingTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        try requireFFmpeg()
        dir = try makeScratchDirectory()
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// The burned-in counter of every decoded frame of a file.
    private func counters(_ path: String, width: Int = 640, height: Int = 360) throws -> [UInt64?] {
        let decoded = try Tools.run("ffmpeg", ["-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        let frameBytes = width * height
        return decoded.stdout.withUnsafeBytes { raw in
            (0..<(decoded.stdout.count / frameBytes)).map { i in
                TestPatternSource.readCounter(luma: raw.baseAddress!.assumingMemoryBound(to: UInt8.self) + i * frameBytes, stride: width)
            }
        }
    }

    /// The source's drop count from the last summary line (it is cumulative).
    private func reportedDrops(_ stderr: String) -> Int {
        let lines = stderr.split(separator: "\n").filter { $0.contains("camrec: finished") }
        guard let last = lines.last, let field = last.split(separator: " ").first(where: { $0.hasPrefix("dropped=") }) else { return 0 }
        return Int(field.dropFirst("dropped=".count)) ?? 0
    }

    private func files(_ suffix: String, under root: String) -> [String] {
        let all = (FileManager.default.enumerator(atPath: root)?.allObjects as? [String]) ?? []
        return all.filter { $0.hasSuffix(suffix) }.sorted { a, b in
            // cam-N: numeric order of the segment counter
            let n = { (s: String) in Int(s.split(separator: "-").last!.split(separator: ".").first!) ?? 0 }
            return n(a) < n(b)
        }
    }

    func testSegmentsPlayAloneAndAddUpWithNoGapOrRepeat() throws {
        // 640 wide: the burned-in counter needs 560 pixels.
        let r = try Tools.camrec(["--test-pattern", "--size", "640x360", "--duration", "9", "--segment", "2",
                                  "--save-timestamps", "--keyframe-interval", "15", "--bitrate", "1M", "seg/%Y%m%d/cam-{n}.h264"], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        let segments = files(".h264", under: dir + "/seg")
        XCTAssertEqual(segments.count, 5, "\(segments)")
        var all: [UInt64] = []
        for name in segments {
            let path = "\(dir)/seg/\(name)"
            let frames = try Tools.decodedFrameCount(path)
            XCTAssertEqual(try Tools.decodeErrors(path), "", name)
            try assertStreamContract(path, idrEvery: 15, frames: frames)
            let pts = try String(contentsOfFile: path.replacingOccurrences(of: ".h264", with: ".pts"), encoding: .utf8)
            XCTAssertTrue(pts.hasPrefix("# timecode format v2\n0.000\n33.333\n"), pts)
            XCTAssertEqual(pts.split(separator: "\n").count, frames + 1)
            let c = try counters(path)
            XCTAssertFalse(c.contains(nil), "counter readable in every frame of \(name)")
            all += c.compactMap { $0 }
        }
        // A real-time source may drop frames on a busy machine; it reports them. Whatever it
        // delivered is in the files exactly once: kept + dropped = 9 s at 30 fps.
        let dropped = reportedDrops(r.stderr)
        XCTAssertEqual(all.count + dropped, 270, "frames in files + reported drops")
        XCTAssertEqual(Set(all).count, all.count, "no frame repeated across segments")
        XCTAssertEqual(all, all.sorted(), "in order across segments")
        if dropped == 0 { XCTAssertEqual(all, Array(0..<270)) }
        // Cuts fall on the first IDR after each 2-second boundary: frames 60, 120, 180, 240.
        if dropped == 0 {
            XCTAssertEqual(try segments.dropLast().map { try Tools.decodedFrameCount("\(dir)/seg/\($0)") }, [60, 60, 60, 60])
        }
        XCTAssertEqual(r.stderr.components(separatedBy: "camrec: finished").count - 1, 5, "one line per finished file")
    }

    func testRetentionDeletesExactlyTheOldest() throws {
        let keep = "\(dir)/seg/notes.txt"
        try FileManager.default.createDirectory(atPath: dir + "/seg", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: keep, contents: Data("mine".utf8))
        let r = try Tools.camrec(["--test-pattern", "--size", "320x180", "--duration", "9", "--segment", "2",
                                  "--keep-files", "2", "seg/cam-{n}.h264"], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(files(".h264", under: dir + "/seg"), ["cam-4.h264", "cam-5.h264"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: keep), "nothing but this recording's files is touched")
    }

    func testSIGHUPStartsANewFileAndSIGTERMFinishesTheLast() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Tools.camrec)
        process.arguments = ["--test-pattern", "--size", "640x360", "--keyframe-interval", "30", "rot/cam-{n}.h264"]
        process.currentDirectoryURL = URL(fileURLWithPath: dir)
        let err = Pipe()
        process.standardError = err
        try process.run()
        sleep(2)
        kill(process.processIdentifier, SIGHUP)
        sleep(2)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, stderr)
        let made = files(".h264", under: dir + "/rot")
        XCTAssertEqual(made, ["cam-1.h264", "cam-2.h264"], stderr)
        var all: [UInt64] = []
        for name in made {
            let path = "\(dir)/rot/\(name)"
            let frames = try Tools.decodedFrameCount(path)
            XCTAssertGreaterThan(frames, 20)
            XCTAssertEqual(try Tools.decodeErrors(path), "")
            XCTAssertEqual(try Tools.keyFrameIndices(path).first, 0, "each file starts with an IDR")
            all += try counters(path).compactMap { $0 }
        }
        XCTAssertEqual(all, all.sorted())
        XCTAssertEqual(Set(all).count, all.count, "no frame in both files")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/rot").filter { $0.hasSuffix(".partial") }, [])
    }

    func testAFullDiskKeepsEveryWholeFrameUnderTheFinalName() throws {
        try XCTSkipIf(getuid() != 0, "mounting a small tmpfs needs root")
        let mountPoint = dir + "/small"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mount = try Tools.run("/bin/mount", ["-t", "tmpfs", "-o", "size=400k", "tmpfs", mountPoint])
        XCTAssertEqual(mount.status, 0, "mount tmpfs: \(mount.stderr)")
        defer { _ = try? Tools.run("/bin/umount", [mountPoint]) }
        let r = try Tools.camrec(["--test-pattern", "--size", "320x180", "--keyframe-interval", "10", "--bitrate", "2M",
                                  "small/cam-{n}.h264"], cwd: dir)
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertTrue(r.stderr.contains("disk full"), r.stderr)
        let path = mountPoint + "/cam-1.h264"
        let frames = try Tools.decodedFrameCount(path)
        XCTAssertGreaterThan(frames, 10)
        XCTAssertEqual(try Tools.decodeErrors(path), "", "the last frame is whole")
        XCTAssertTrue(r.stderr.contains("frames=\(frames)"), r.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mountPoint), ["cam-1.h264"])
    }

    func testAClashingPatternNamePicksAnAlternativeAndAFixedNameFails() throws {
        try FileManager.default.createDirectory(atPath: dir + "/c", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dir + "/c/cam-1.h264", contents: Data("old".utf8))
        let r = try Tools.camrec(["--test-pattern", "--size", "320x180", "--frames", "5", "c/cam-{n}.h264"], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try String(contentsOfFile: dir + "/c/cam-1.h264", encoding: .utf8), "old")
        XCTAssertEqual(try Tools.decodedFrameCount(dir + "/c/cam-1-2.h264"), 5)
        let fixed = try Tools.camrec(["--test-pattern", "--size", "320x180", "--frames", "5", "c/cam-1.h264"], cwd: dir)
        XCTAssertEqual(fixed.status, 76, fixed.stderr)
    }

    func testMissingDirectoriesAreCreated() throws {
        let r = try Tools.camrec(["--test-pattern", "--size", "320x180", "--frames", "3", "a/b/c/out.h264"], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try Tools.decodedFrameCount(dir + "/a/b/c/out.h264"), 3)
    }
}
