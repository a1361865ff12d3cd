import Capture
import Foundation
import Logging
import Recorder
import Synchronization
import XCTest
@testable import camrec

/// `RecordingPlan` built from command-line arguments and run in this process, without spawning camrec:
/// each output gets the stream of its own codec, checked by ffprobe.
final class RecordingPlanTests: XCTestCase {
    func testTwoCodecsGiveTwoHubsAndEachFileTheStreamOfItsOwnCodec() throws {
        try requireFFmpeg()
        let dir = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let command = try RecordCommand.parse(["--test-pattern", "--size", "320x240", "--frames", "20",
                                               "--keyframe-interval", "10", "--log-level", "error",
                                               "\(dir)/a.h264", "\(dir)/b.h265"])
        var logger = Logger(label: "test")
        logger.logLevel = .error
        let plan = try RecordingPlan(command, logger: logger)
        XCTAssertEqual(plan.codecs, [.h264, .hevc], "the codecs in the order of their first output")
        XCTAssertEqual(Set(plan.hubs.keys), [.h264, .hevc], "one hub per encoding")
        XCTAssertEqual(plan.fileOutputs.count, 2)
        XCTAssertNil(plan.liveView)

        try plan.outputSet.open { error in XCTFail("output failed: \(error)") }
        var result = plan.recorder.run()
        result.settle(outputs: plan.outputSet.finish())
        XCTAssertNil(result.failure)
        XCTAssertEqual(result.framesEncoded, 20)

        // Two encodings of a live source may skip frames on a busy machine; each file holds exactly
        // what its output reports, in its own codec (ffprobe, not camrec, says which).
        for (name, codec) in [("a.h264", "h264"), ("b.h265", "hevc")] {
            let path = "\(dir)/\(name)"
            let probe = try Tools.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name",
                                                  "-of", "csv=p=0", path])
            XCTAssertEqual(probe.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines), codec, name)
            let report = try XCTUnwrap(result.outputs.first { $0.path == path }, "a report for \(name)")
            XCTAssertGreaterThan(report.frames, 0, name)
            XCTAssertEqual(try Tools.decodedFrameCount(path), report.frames, "\(name): every frame its output reports")
        }
        XCTAssertEqual(result.outputs.first { $0.path == "\(dir)/a.h264" }?.frames, 20, "--frames counts the first encoding's pictures")
    }

    /// --wait: a busy camera is tried again when the program that had it closes its node (inotify), and
    /// each attempt's own open and close of the node are not taken for that (no loop of attempts). The
    /// node is a plain file held open by the test; an attempt opens and closes it as a camera's does, and
    /// is busy while the holder has it.
    func testWaitingForABusyCameraTriesAgainWhenTheHolderClosesIt() throws {
        let dir = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let node = "\(dir)/video9"
        XCTAssertTrue(FileManager.default.createFile(atPath: node, contents: nil))
        let holder = open(node, O_RDONLY)
        let held = HeldNode()
        var attempts = 0
        let started = Date()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.4) {
            held.isHeld.store(false, ordering: .sequentiallyConsistent)
            close(holder)
        }
        let got = try waitingWhileBusy(seconds: 20, device: node) { () throws -> Int in
            let fd = open(node, O_RDONLY)
            defer { close(fd) }
            attempts += 1
            if held.isHeld.load(ordering: .sequentiallyConsistent) { throw CaptureError(.deviceBusy, "\(node) is busy") }
            return attempts
        }
        let waited = Date().timeIntervalSince(started)
        XCTAssertTrue(waited >= 0.4 && waited < 5, "got the node \(waited) s in, 0.4 s after the holder took it (the deadline: 20 s)")
        // The first attempt, one at once when the watch is set, one when the holder closes (and one more
        // if its close fell between an attempt's own open and close).
        XCTAssertLessThanOrEqual(got, 4, "attempts")
    }

    /// --wait SECONDS: still busy after them, the busy error, once the deadline has passed.
    func testWaitingForACameraBusyPastTheDeadlineEndsWithTheBusyError() throws {
        let dir = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let node = "\(dir)/video9"
        XCTAssertTrue(FileManager.default.createFile(atPath: node, contents: nil))
        let started = Date()
        XCTAssertThrowsError(try waitingWhileBusy(seconds: 0.5, device: node) { () throws -> Int in
            let fd = open(node, O_RDONLY)
            defer { close(fd) }
            throw CaptureError(.deviceBusy, "\(node) is busy")
        }) { error in
            XCTAssertEqual((error as? CaptureError)?.kind, .deviceBusy)
        }
        let waited = Date().timeIntervalSince(started)
        XCTAssertTrue(waited >= 0.5 && waited < 5, "gave up \(waited) s in (--wait 0.5)")
    }
}

/// Whether the test's holder still has the node open.
private final class HeldNode: Sendable {
    let isHeld = Atomic<Bool>(true)
}
