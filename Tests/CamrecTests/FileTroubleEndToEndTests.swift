import Foundation
import XCTest

/// Finishing a file when its place changed under camrec during the recording (docs/RECORDING.md: "Files are written
/// under a temporary name…", exit statuses 75 and 76), with the real binary: the directory removed, a
/// regular file or a FIFO put under the final name. Each test records until the `.partial` visibly holds
/// frames, makes the trouble, then stops camrec with SIGTERM: no sleeps.
final class FileTroubleEndToEndTests: ScratchDirectoryTestCase {

    private struct Finished {
        var status: Int32
        var stderr: String
        /// Lines of stderr that start with "camrec: error".
        var errorLines: [String] { stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("camrec: error") } }
        var summary: String? { stderr.split(separator: "\n").map(String.init).first { $0.hasPrefix("camrec: finished") } }
    }

    /// Records the test pattern (640x360: the burned-in counter is readable) to `out/rec.h264`, waits
    /// until its `.partial` holds at least 20 kB (an IDR and a few frames: about 0.5 s), runs `trouble`,
    /// sends SIGTERM and waits up to 20 s for camrec to end (a camrec blocked on a FIFO never would).
    private func recordWithTrouble(_ trouble: () throws -> Void) throws -> Finished {
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Tools.camrec)
        process.arguments = ["--test-pattern", "--size", "640x360", "--keyframe-interval", "30", "--preset", "ultrafast", "out/rec.h264"]
        process.currentDirectoryURL = URL(fileURLWithPath: dir)
        process.standardInput = FileHandle.nullDevice
        let err = Pipe()
        process.standardError = err
        let errBox = DataBox()
        let reader = DispatchGroup()
        reader.enter()
        try process.run()
        DispatchQueue.global().async { errBox.set(err.fileHandleForReading.readDataToEndOfFile()); reader.leave() }
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        XCTAssertNotNil(waitForPartial(atLeast: 20_000), "the .partial never held 20 kB")
        try trouble()
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        XCTAssertFalse(process.isRunning, "camrec still running 20 s after SIGTERM")
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        reader.wait()
        return Finished(status: process.terminationStatus, stderr: String(decoding: errBox.get(), as: UTF8.self))
    }

    /// The name of `rec.h264.camrec-PID.partial` once it holds `bytes` (waits up to 20 s).
    private func waitForPartial(atLeast bytes: Int) -> String? {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let name = partialName(),
               let size = try? FileManager.default.attributesOfItem(atPath: "\(dir)/out/\(name)")[.size] as? Int, size >= bytes {
                return name
            }
            usleep(20_000)
        }
        return nil
    }

    private func partialName() -> String? {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/out")) ?? [])
            .first { $0.hasPrefix("rec.h264.camrec-") && $0.hasSuffix(".partial") }
    }

    private func fileType(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : nil
    }

    /// The number after `frames=` in a summary line.
    private func frames(_ summary: String?) -> Int? {
        summary?.split(separator: " ").first { $0.hasPrefix("frames=") }.flatMap { Int($0.dropFirst("frames=".count)) }
    }

    /// The `.partial` named in the error line holds every frame the summary counts, in order, the gaps
    /// only frames the summary reports dropped.
    private func assertKeptAsPartial(_ r: Finished, file: StaticString = #filePath, line: UInt = #line) throws {
        guard let partial = partialName() else { return XCTFail("no .partial left in out/: \(r.stderr)", file: file, line: line) }
        XCTAssertEqual(r.errorLines.count, 1, "one error line: \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.errorLines.first?.hasSuffix("the recording is kept as out/\(partial)") ?? false,
                      "the error line says where the recording is: \(r.stderr)", file: file, line: line)
        XCTAssertEqual(fileType("\(dir)/out/\(partial)"), S_IFREG, file: file, line: line)
        let n = try XCTUnwrap(frames(r.summary), "summary line: \(r.stderr)", file: file, line: line)
        XCTAssertGreaterThan(n, 0, file: file, line: line)
        // The pattern is live: beside a busy process its first frames can come too late and be dropped.
        Tools.assertEveryFrameAccounted(try Tools.patternCounters("\(dir)/out/\(partial)"), frames: n,
                                        summary: r.summary ?? r.stderr, file: file, line: line)
    }

    func testDirectoryRemovedWhileRecordingSaysSavedNoAndExits75WithOneLineSayingTheFramesAreLost() throws {
        let r = try recordWithTrouble { try FileManager.default.removeItem(atPath: dir + "/out") }
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertTrue(r.summary?.contains(" saved=no") ?? false, "summary: \(r.stderr)")
        XCTAssertEqual(r.errorLines.count, 1, "one error line: \(r.stderr)")
        // The line must not claim the recording was kept anywhere: it went with the directory.
        let error = r.errorLines.first ?? ""
        XCTAssertTrue(error.contains("out/rec.h264.camrec-") && error.hasSuffix("the frames written to it are lost"),
                      "the error line names the vanished .partial and says its frames are lost: \(error)")
        XCTAssertFalse(error.contains("saved") || error.contains("kept"), "nothing is claimed saved: \(error)")
        XCTAssertNil(fileType(dir + "/out"), "camrec did not make the directory again")
    }

    func testRegularFileCreatedUnderTheFinalNameIsKeptUntouchedAndTheRecordingStaysPartialWithExit76() throws {
        let final = dir + "/out/rec.h264"
        var before = stat()
        let r = try recordWithTrouble {
            try Data("someone else's\n".utf8).write(to: URL(fileURLWithPath: final))
            XCTAssertEqual(stat(final, &before), 0)
        }
        XCTAssertEqual(r.status, 76, r.stderr)
        XCTAssertEqual(try String(contentsOfFile: final, encoding: .utf8), "someone else's\n", "the other file's bytes")
        var after = stat()
        XCTAssertEqual(stat(final, &after), 0)
        XCTAssertEqual(after.st_ino, before.st_ino, "the same file (inode), not replaced")
        XCTAssertTrue(r.summary?.contains(" cut-short=exists") ?? false, "summary: \(r.stderr)")
        try assertKeptAsPartial(r)
    }

    func testFIFOPutUnderTheFinalNameIsNeitherOpenedNorReplacedAndTheRecordingStaysPartialWithExit76() throws {
        let final = dir + "/out/rec.h264"
        let r = try recordWithTrouble { XCTAssertEqual(mkfifo(final, 0o644), 0) }
        // recordWithTrouble already failed if camrec blocked (opening a FIFO for writing waits for a reader).
        XCTAssertEqual(r.status, 76, r.stderr)
        XCTAssertEqual(fileType(final), S_IFIFO, "the FIFO is still there, not replaced")
        // Nothing was written into it: with no writer left, a non-blocking read sees end of file at once.
        let fd = open(final, O_RDONLY | O_NONBLOCK)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var byte: UInt8 = 0
        XCTAssertEqual(read(fd, &byte, 1), 0, "the FIFO holds no bytes")
        close(fd)
        XCTAssertTrue(r.errorLines.first?.contains("out/rec.h264 became a FIFO (named pipe) while recording") ?? false, r.stderr)
        try assertKeptAsPartial(r)
    }
}
