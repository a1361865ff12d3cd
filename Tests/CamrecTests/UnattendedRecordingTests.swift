import Capture
import Frames
import Foundation
import XCTest

/// Segments, rotation, retention, a full disk and name clashes, as cron and systemd users meet them.
final class UnattendedRecordingTests: ScratchDirectoryTestCase {

    private func counters(_ path: String) throws -> [UInt64?] { try Tools.patternCounters(path) }

    /// The source's drop count from the last summary line (it is cumulative).
    private func reportedDrops(_ stderr: String) -> Int {
        let lines = stderr.split(separator: "\n").filter { $0.contains("camrec: finished") }
        guard let last = lines.last, let field = last.split(separator: " ").first(where: { $0.hasPrefix("dropped=") }) else { return 0 }
        return Int(field.dropFirst("dropped=".count)) ?? 0
    }

    /// Waits (up to 20 s) until `NAME.camrec-PID.partial` in `directory` holds at least `bytes`.
    private func waitForPartial(in directory: String, named name: String, atLeast bytes: Int) -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            if let partial = names.first(where: { $0.hasPrefix(name + ".camrec-") && $0.hasSuffix(".partial") }),
               let size = try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(partial)")[.size] as? Int, size >= bytes {
                return true
            }
            usleep(50_000)
        }
        return false
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
                                  "--save-timestamps", "--keyframe-interval", "15", "--bitrate", "1M", "--preset", "ultrafast", "seg/%Y%m%d/cam-{n}.h264"], cwd: dir)
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
        // 640x360 at 1 Mbit/s, ultrafast, is a light load: the source drops nothing, and every frame of the
        // 9 s at 30 fps is in exactly one file, in order.
        XCTAssertEqual(reportedDrops(r.stderr), 0, r.stderr)
        XCTAssertEqual(all, Array(0..<270), "every frame once, in order across segments")
        // Cuts fall on the first IDR after each 2-second boundary: frames 60, 120, 180, 240.
        XCTAssertEqual(try segments.dropLast().map { try Tools.decodedFrameCount("\(dir)/seg/\($0)") }, [60, 60, 60, 60])
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
        process.arguments = ["--test-pattern", "--size", "640x360", "--keyframe-interval", "30", "--preset", "ultrafast", "rot/cam-{n}.h264"]
        process.currentDirectoryURL = URL(fileURLWithPath: dir)
        let err = Pipe()
        process.standardError = err
        try process.run()
        // Rotate once the first file visibly holds frames, stop once the second does.
        XCTAssertTrue(waitForPartial(in: dir + "/rot", named: "cam-1.h264", atLeast: 20_000), "cam-1 never grew")
        kill(process.processIdentifier, SIGHUP)
        XCTAssertTrue(waitForPartial(in: dir + "/rot", named: "cam-2.h264", atLeast: 20_000), "no second file after SIGHUP")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, stderr)
        let made = files(".h264", under: dir + "/rot")
        XCTAssertEqual(made, ["cam-1.h264", "cam-2.h264"], stderr)
        var all: [UInt64] = []
        for name in made {
            let path = "\(dir)/rot/\(name)"
            XCTAssertGreaterThan(try Tools.decodedFrameCount(path), 0, "\(name) holds frames")
            XCTAssertEqual(try Tools.decodeErrors(path), "")
            XCTAssertEqual(try Tools.keyFrameIndices(path).first, 0, "each file starts with an IDR")
            all += try counters(path).compactMap { $0 }
        }
        // Nothing dropped at 640x360: the two files hold frames 0...N-1 between them, each once.
        XCTAssertEqual(reportedDrops(stderr), 0, stderr)
        XCTAssertEqual(all, Array(0..<UInt64(all.count)), "every frame in exactly one file, in order")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/rot").filter { $0.hasSuffix(".partial") }, [])
    }

    func testAFullDiskKeepsEveryWholeFrameUnderTheFinalName() throws {
        try XCTSkipIf(getuid() != 0, "mounting a small tmpfs needs root")
        let mountPoint = dir + "/small"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mount = try Tools.run("/bin/mount", ["-t", "tmpfs", "-o", "size=400k", "tmpfs", mountPoint])
        XCTAssertEqual(mount.status, 0, "mount tmpfs: \(mount.stderr)")
        defer { _ = try? Tools.run("/bin/umount", [mountPoint]) }
        let r = try Tools.camrec(["--test-pattern", "--size", "640x360", "--keyframe-interval", "10", "--bitrate", "2M",
                                  "small/cam-{n}.h264"], cwd: dir)
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertTrue(r.stderr.contains("disk full"), r.stderr)
        let path = mountPoint + "/cam-1.h264"
        let frames = try Tools.decodedFrameCount(path)
        // Every frame from the first to the last whole one, in order (nothing dropped at 640x360).
        XCTAssertEqual(try counters(path), (0..<UInt64(frames)).map { $0 }, r.stderr)
        // The disk really was filled: what is left of the 400 KiB is less than the frame that did
        // not fit plus tmpfs's page rounding (an IDR here is about 25 kB; 64 KiB is ample).
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        XCTAssertGreaterThan(size, 400 * 1024 - 64 * 1024, "file size \(size)")
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
