import Capture
import Frames
import Foundation
import XCTest

/// The built camrec, end to end, checked by ffprobe/ffmpeg and by our own scanner.
final class RecordingEndToEndTests: ScratchDirectoryTestCase {

    func testTestPatternGivesExactlyTheFramesAskedWithIDRsOnTheGrid() throws {
        let out = "\(dir)/out.h264"
        let r = try Tools.camrec(["--test-pattern", "--frames", "200", "--keyframe-interval", "30", out])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try Tools.decodedFrameCount(out), 200)
        XCTAssertEqual(try Tools.keyFrameIndices(out), Array(stride(from: 0, to: 200, by: 30)))
        XCTAssertEqual(try Tools.decodeErrors(out), "")
        try assertStreamContract(out, idrEvery: 30, frames: 200)
        let inspect = try Tools.camrec(["inspect", out])
        XCTAssertEqual(inspect.status, 0, inspect.stdoutText + inspect.stderr)
        XCTAssertTrue(inspect.stdoutText.contains("stream contract: OK"), inspect.stdoutText)
        XCTAssertTrue(r.stderr.contains("frames=200"), r.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["out.h264"], "no temporary file left")
    }

    /// The default stream is bare: read here with a plain split at `00 00 00 01` (not camrec's scanner),
    /// the NAL types are SPS PPS IDR at every IDR and one P slice otherwise, in the file and on stdout;
    /// `inspect` says `bare: yes`. With `--timing-sei` it names the first access unit, and in ffmpeg's own
    /// libx264 output the SEI between PPS and IDR.
    func testDefaultStreamIsBareAndInspectNamesWhatIsNot() throws {
        let out = "\(dir)/bare.h264"
        let r = try Tools.camrec(["--test-pattern", "--size", "320x240", "--frames", "20", "--keyframe-interval", "10", out, "-"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let expected = (0..<20).flatMap { $0 % 10 == 0 ? [7, 8, 5] : [1] }
        for bytes in [try Data(contentsOf: URL(fileURLWithPath: out)), r.stdout] {
            XCTAssertEqual(Array(bytes.prefix(4)), [0, 0, 0, 1])
            // Each piece after a 00 00 00 01 starts with its NAL header (slice data holds no 00 00 00 01).
            var types: [Int] = []
            var index = 0
            let all = [UInt8](bytes)
            while index + 4 < all.count {
                if all[index] == 0 && all[index + 1] == 0 && all[index + 2] == 0 && all[index + 3] == 1 {
                    types.append(Int(all[index + 4] & 0x1F))
                    index += 4
                } else {
                    index += 1
                }
            }
            XCTAssertEqual(types, expected)
        }
        let inspect = try Tools.camrec(["inspect", "--summary", out])
        XCTAssertEqual(inspect.status, 0, inspect.stdoutText)
        XCTAssertTrue(inspect.stdoutText.contains("bare: yes"), inspect.stdoutText)

        let timed = "\(dir)/timed.h264"
        XCTAssertEqual(try Tools.camrec(["--test-pattern", "--size", "320x240", "--frames", "5", "--timing-sei", timed]).status, 0)
        let timedText = try Tools.camrec(["inspect", "--summary", timed]).stdoutText
        XCTAssertTrue(timedText.contains("bare: no") && timedText.contains("5 of 5 access units are not bare (first: access unit 0 is SEI SPS PPS IDR at offset 0)"), timedText)

        let theirs = "\(dir)/ffmpeg.h264"
        let made = try Tools.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-frames:v", "10",
                                            "-c:v", "libx264", theirs])
        XCTAssertEqual(made.status, 0, made.stderr)
        let theirText = try Tools.camrec(["inspect", "--summary", theirs]).stdoutText
        XCTAssertTrue(theirText.contains("access units are not bare (access unit 0 is SPS PPS SEI IDR at offset 0)"), theirText)
    }

    func testBurnedInCounterShowsNoFrameLostOrRepeated() throws {
        let out = "\(dir)/counter.h264"
        let r = try Tools.camrec(["--test-pattern", "--size", "640x360", "--frames", "60", "--bitrate", "4M", "--preset", "ultrafast", out])
        XCTAssertEqual(r.status, 0, r.stderr)
        // Read only the frames ffmpeg decoded: a short file must fail the test, not crash the run.
        let counters = try Tools.patternCounters(out)
        XCTAssertFalse(counters.contains(nil), "frame number readable in every frame")
        // 640x360 at 30 fps, ultrafast, is a light load for libx264 (several times real time here), so the
        // pattern source must drop nothing: every frame 0...59 once, in order, and the summary says so.
        XCTAssertTrue(r.stderr.contains("dropped=0"), r.stderr)
        XCTAssertEqual(counters, (0..<UInt64(60)).map { $0 })
    }

    /// --test-scene through the binary: every frame encoded and decoded, its counter read back by the
    /// independent reader, and the summary names the source.
    func testTestSceneCarriesTheCounterInEveryFrame() throws {
        let out = "\(dir)/scene.h264"
        let r = try Tools.camrec(["--test-scene", "--size", "640x360", "--frames", "45", "--preset", "ultrafast",
                                  "--log-level", "info", out])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("test scene 640x360 @ 30 fps"), r.stderr)
        Tools.assertEveryFrameAccounted(try Tools.patternCounters(out), frames: 45, output: out, stderr: r.stderr)
        let both = try Tools.camrec(["--test-scene", "--test-pattern", "--frames", "1", "\(dir)/no.h264"])
        XCTAssertEqual(both.status, 64, both.stderr)
        XCTAssertTrue(both.stderr.contains("give only one of --device, --test-pattern, --test-scene and --input"), both.stderr)
    }

    func testRawYUYVInputDecodesToTheSamePicture() throws {
        let raw = "\(dir)/in.yuyv", out = "\(dir)/raw.h264"
        let gen = try Tools.run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-frames:v", "20",
                                           "-pix_fmt", "yuyv422", "-f", "rawvideo", raw])
        XCTAssertEqual(gen.status, 0, gen.stderr)
        let r = try Tools.camrec(["--input", raw, "--input-format", "yuyv", "--size", "1920x1080", "--bitrate", "40M",
                                  "--keyframe-interval", "10", out])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try Tools.decodedFrameCount(out), 20)
        try assertStreamContract(out, idrEvery: 10, frames: 20)
        let psnr = try Tools.run("ffmpeg", ["-v", "info", "-i", out, "-f", "rawvideo", "-pix_fmt", "yuyv422", "-s", "1920x1080",
                                            "-i", raw, "-lavfi", Tools.psnrFilter, "-f", "null", "-"])
        // Measured 61.48 dB (3 runs, the same each time): 40 Mbit/s for a 1080p test pattern is nearly lossless.
        // 55 leaves room for another libx264 or thread count; a chroma or luma off by a level is below it.
        XCTAssertGreaterThan(Tools.averagePSNR(psnr.stderr) ?? 0, 55, psnr.stderr)
    }

    /// An input that ends inside a frame: the whole frames are recorded, and one warning line says how
    /// many bytes were left over; an input of whole frames gets no such line.
    func testRawInputEndingInsideAFrameIsRecordedToItsLastWholeFrameWithAWarning() throws {
        let frameBytes = 64 * 64 * 2
        var generator = SystemRandomNumberGenerator()
        let frames = (0..<(3 * frameBytes)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for (name, bytes, warned) in [("whole", frames, false), ("ragged", frames + Array(repeating: 7, count: 1000), true)] {
            let raw = "\(dir)/\(name).yuyv", out = "\(dir)/\(name).h264"
            XCTAssertTrue(FileManager.default.createFile(atPath: raw, contents: Data(bytes)))
            let r = try Tools.camrec(["--input", raw, "--input-format", "yuyv", "--size", "64x64", out])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(try Tools.decodedFrameCount(out), 3, name)
            let warnings = r.stderr.split(separator: "\n").filter { $0.hasPrefix("camrec: warning: the input ended") }
            XCTAssertEqual(warnings.count, warned ? 1 : 0, "\(name): \(r.stderr)")
            if warned { XCTAssertTrue(warnings[0].contains("ended 1000 bytes into a frame of \(frameBytes)"), r.stderr) }
        }
    }

    func testRawInputFromStdinToStdoutPipedIntoFFprobe() throws {
        let raw = "\(dir)/in.nv12", out = "\(dir)/piped.h264"
        let gen = try Tools.run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=642x362:rate=25", "-frames:v", "50",
                                           "-pix_fmt", "nv12", "-f", "rawvideo", raw])
        XCTAssertEqual(gen.status, 0, gen.stderr)
        // camrec reads stdin and writes stdout; ffmpeg decodes what came through the pipe.
        let shell = "'\(Tools.camrec)' --input - --input-format nv12 --size 642x362 --fps 25 --keyframe-interval 25 - < '\(raw)'"
            + " | tee '\(out)' | ffmpeg -v error -f h264 -i - -f null - ; exit ${PIPESTATUS[0]}"
        let r = try Tools.run("/bin/bash", ["-c", shell])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try Tools.decodedFrameCount(out), 50)
        try assertStreamContract(out, idrEvery: 25, frames: 50)
    }

    /// A size that is not a multiple of 16: the SPS crops it, and the picture survives.
    func testI420InputAtASizeThatIsNotAMultipleOf16() throws {
        let raw = "\(dir)/in.i420", out = "\(dir)/odd.h264"
        let gen = try Tools.run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=650x482:rate=30", "-frames:v", "12",
                                           "-pix_fmt", "yuv420p", "-f", "rawvideo", raw])
        XCTAssertEqual(gen.status, 0, gen.stderr)
        let r = try Tools.camrec(["--input", raw, "--input-format", "i420", "--size", "650x482", "--keyframe-interval", "5",
                                  "--qp", "10", out])
        XCTAssertEqual(r.status, 0, r.stderr)
        let probe = try Tools.run("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", out])
        XCTAssertEqual(probe.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines), "650,482")
        try assertStreamContract(out, idrEvery: 5, frames: 12)
        let psnr = try Tools.run("ffmpeg", ["-v", "info", "-i", out, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "650x482",
                                            "-i", raw, "-lavfi", Tools.psnrFilter, "-f", "null", "-"])
        // Measured 66.60 dB (3 runs, the same each time) at --qp 10; bound 60 for another libx264. A wrong
        // crop or a plane read with the wrong stride at this odd size is far below.
        XCTAssertGreaterThan(Tools.averagePSNR(psnr.stderr) ?? 0, 60, psnr.stderr)
    }
}
