@testable import camrec
import Foundation
import Glibc
import XCTest

/// `camrec trigger`: finds a recording camrec by its pid file or the camera's lock, signals it, and
/// never signals anything else. The camera-lock path against a real camrec on vivid is in
/// Tests/vm-cases/unattended-cases.sh; here a real lock is taken on a file by this test process.
final class TriggerCommandTests: ScratchDirectoryTestCase {
    func testTriggerByPidFileMakesAClipAndThePidFileGoesAtTheEnd() throws {
        let pidFile = "\(dir)/cam.pid"
        let (recording, stderr) = try Tools.launch(Tools.camrec, [
            "--test-pattern", "--size", "640x360", "--fps", "30", "--keyframe-interval", "15", "--frames", "150", "--pid-file", pidFile,
            "--event-output", "\(dir)/ev-{n}.mp4", "--pre-roll", "1", "--post-roll", "1", "\(dir)/out.h264"])
        // The pid file is there before the first frame; a trigger that comes too early is refused, so wait
        // for the recording's file to hold frames, then for a second of pre-roll.
        XCTAssertTrue(try waitUntil(seconds: 60) {
            try FileManager.default.contentsOfDirectory(atPath: dir).contains { name in
                name.hasPrefix("out.h264.camrec-") && name.hasSuffix(".partial")
                    && ((try? FileManager.default.attributesOfItem(atPath: "\(dir)/\(name)")[.size] as? Int) ?? 0) > 0
            }
        }, "recording started")
        Thread.sleep(forTimeInterval: 1.5)
        XCTAssertEqual(try String(contentsOfFile: pidFile, encoding: .utf8), "\(recording.processIdentifier)\n")
        let sent = try Tools.camrec(["trigger", "--pid-file", pidFile])
        XCTAssertEqual(sent.status, 0, sent.stderr)
        XCTAssertEqual(sent.stderr, "camrec: event trigger sent to camrec pid \(recording.processIdentifier) (--pid-file \(pidFile))\n")
        // Another recording may not take the same pid file while this one runs.
        let second = try Tools.camrec(["--test-pattern", "--frames", "5", "--pid-file", pidFile, "\(dir)/second.h264"])
        XCTAssertEqual(second.status, 75, second.stderr)
        XCTAssertTrue(second.stderr.contains("names camrec pid \(recording.processIdentifier), which is still running"), second.stderr)
        // Never put in place of something that is not a regular file (as root, /dev/null itself).
        XCTAssertEqual(mkfifo("\(dir)/fifo.pid", 0o600), 0)
        for special in ["/dev/null", "\(dir)/fifo.pid", dir] {
            let refused = try Tools.camrec(["--test-pattern", "--frames", "5", "--pid-file", special, "\(dir)/special.h264"])
            XCTAssertEqual(refused.status, 75, "\(special): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains("--pid-file \(special) exists and is not a regular file"), refused.stderr)
        }
        var status = stat()
        XCTAssertTrue(stat("/dev/null", &status) == 0 && status.st_mode & S_IFMT == S_IFCHR, "/dev/null is still the device")
        recording.waitUntilExit()
        let log = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(recording.terminationStatus, 0, log)
        let startLine = try XCTUnwrap(log.split(separator: "\n").first { $0.hasPrefix("camrec: event 1 started at frame ") }, log)
        XCTAssertTrue(startLine.hasSuffix("(signal)"), String(startLine))
        let t = try XCTUnwrap(Int(startLine.split(separator: " ")[6]), String(startLine))
        // An IDR every 15 frames, so the second of pre-roll (30 frames) reaches past the IDR before the
        // trigger; the truth is the burned-in numbers (read at 640x360 and up) of the recording beside the clip.
        let expected = try framesOf("\(dir)/out.h264", fromIDRAtOrBefore: t - 30, through: t + 30)
        XCTAssertEqual(try Tools.patternCounters("\(dir)/ev-1.mp4"), expected.map { UInt64($0) },
                       "the clip holds pre-roll and post-roll: every frame from the newest IDR at or before \(t - 30) to \(t + 30)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: pidFile), "removed at the end")
        let after = try Tools.camrec(["trigger", "--pid-file", pidFile])
        XCTAssertEqual(after.status, 78, after.stderr)
    }

    func testNothingButCamrecIsSignalled() throws {
        // A lock on a file held by this test process (not camrec): found, and refused.
        let path = "\(dir)/locked"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        let fd = open(path, O_RDONLY)
        XCTAssertEqual(flock(fd, LOCK_EX | LOCK_NB), 0)
        defer { close(fd) }
        let held = try Tools.camrec(["trigger", "--device", path])
        XCTAssertEqual(held.status, 78, held.stderr)
        XCTAssertTrue(held.stderr.contains("\(path) is held by pid \(getpid())") && held.stderr.contains("which is not camrec"), held.stderr)
        // A pid file naming a live process that is not camrec (a camrec that died, its pid reused).
        try "\(getpid())\n".write(toFile: "\(dir)/stale.pid", atomically: true, encoding: .utf8)
        try "x\n".write(toFile: "\(dir)/junk.pid", atomically: true, encoding: .utf8)
        XCTAssertEqual(mkfifo("\(dir)/fifo.pid", 0o600), 0)
        let cases: [([String], Int32, String)] = [
            (["--pid-file", "\(dir)/stale.pid"], 78, "names pid \(getpid()), which is"),
            (["--pid-file", "\(dir)/junk.pid"], 78, "holds no process id"),
            (["--pid-file", "\(dir)/fifo.pid"], 78, "not a regular file"),
            (["--pid-file", "\(dir)/absent.pid"], 78, "No such file"),
            (["--device", "\(dir)/unlocked"], 78, "No such file"),
            (["--device", "/dev/null"], 78, "no process is recording /dev/null"),
            (["--device", "/dev/null", "--pid-file", "\(dir)/stale.pid"], 64, "give --device or --pid-file, not both"),
        ]
        for (arguments, status, message) in cases {
            let r = try Tools.camrec(["trigger"] + arguments)
            XCTAssertEqual(r.status, status, "\(arguments): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(message) && r.stderr.split(separator: "\n").count == 1, "\(arguments): \(r.stderr)")
        }
    }

    /// /proc/locks as the kernel writes it: the holder's pid, the file as hex major:minor:inode; waiters (`->`) skipped.
    func testLockHoldersAreReadFromProcLocks() {
        let device = dev_t((0x1f << 8) | 0x03)  // major 0x1f, minor 3
        let locks = """
        1: FLOCK  ADVISORY  WRITE 4242 1f:03:7 0 EOF
        1: -> FLOCK  ADVISORY  WRITE 5151 1f:03:7 0 EOF
        2: POSIX  ADVISORY  WRITE 99 1f:03:70 0 EOF
        3: FLOCK  ADVISORY  WRITE 77 00:05:7 0 EOF
        4: FLOCK  ADVISORY  WRITE 4242 1f:03:7 0 EOF
        garbage
        """
        XCTAssertEqual(RunningRecorder.lockHolders(device: device, inode: 7, locks: locks), [4242])
        XCTAssertEqual(RunningRecorder.lockHolders(device: device, inode: 70, locks: locks), [99])
        XCTAssertEqual(RunningRecorder.lockHolders(device: device, inode: 8, locks: locks), [])
    }

    /// The burned-in numbers of the recording at `path` from its newest IDR numbered at or before
    /// `start` through its last frame numbered at or before `end`.
    private func framesOf(_ path: String, fromIDRAtOrBefore start: Int, through end: Int) throws -> [Int] {
        let counters = try Tools.patternCounters(path)
        let numbers = counters.compactMap { $0.map(Int.init) }
        guard !numbers.isEmpty, numbers.count == counters.count else {
            XCTFail("every picture of \(path) has its number: \(counters)")
            return []
        }
        let idrs = try Tools.keyFrameIndices(path).map { numbers[$0] }
        let first = try XCTUnwrap(idrs.last { $0 <= start }, "an IDR at or before \(start) in \(idrs)")
        return numbers.filter { $0 >= first && $0 <= end }
    }

    private func waitUntil(seconds: Double, _ condition: () throws -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }
}
