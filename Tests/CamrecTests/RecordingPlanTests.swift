import Foundation
import Logging
import Recorder
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
}
