@testable import Containers
import Bitstream
import Foundation
import Hub
import Outputs
import XCTest

/// camrec's own MP4 writer against outside truth: real libx264/libx265 streams made by ffmpeg, written
/// into MP4 by `FragmentedMP4Writer`, then read back by ffmpeg (every frame decoded, its MD5 equal to
/// the same frame decoded from the raw stream beside it), ffprobe (times, sample entry) and
/// Tests/tools/container-keys.py (the sync samples the file's own tables mark).
final class FragmentedMP4WriterTests: XCTestCase {
    let pool = StreamChunkPool()
    var directory = ""
    static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("tools").path

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "camrec-ownmp4-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "\(tool) \(arguments.joined(separator: " ")): \(errors)")
        return text
    }

    /// `frames` pictures of ffmpeg's test source encoded by libx264 or libx265 (GOP 30, closed, no
    /// B-frames, as camrec's encoders), split into access units at their delimiters and rebuilt with
    /// 4-byte start codes, parameter sets before every IDR (the stream contract).
    func accessUnits(_ codec: VideoCodec, frames: Int) throws -> [(bytes: [UInt8], idr: Bool)] {
        let path = "\(directory)/source.\(codec == .h264 ? "h264" : "h265")"
        let encoder: [String] = codec == .h264
            ? ["-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0",
               "-x264-params", "aud=1", "-f", "h264"]
            : ["-c:v", "libx265", "-preset", "ultrafast",
               "-x265-params", "keyint=30:min-keyint=30:scenecut=0:open-gop=0:bframes=0:aud=1:repeat-headers=1:log-level=error",
               "-f", "hevc"]
        try run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "\(frames)",
                                    "-pix_fmt", "yuv420p"] + encoder + [path])
        let stream = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        var units: [(bytes: [UInt8], idr: Bool)] = []
        for unit in AnnexBScanner.units(in: stream) {
            let type = codec.typeValue(of: unit.bytes)
            if codec.role(ofType: type) == .accessUnitDelimiter {
                units.append(([], false))
                continue
            }
            units[units.count - 1].bytes += [0, 0, 0, 1] + unit.bytes
            if codec.role(ofType: type) == .idrSlice { units[units.count - 1].idr = true }
        }
        return units
    }

    /// Writes `units` at `times` (ms) into NAME.mp4 with `FragmentedMP4Writer`, and the same access
    /// units into NAME.raw beside it.
    func write(_ units: [(bytes: [UInt8], idr: Bool)], codec: VideoCodec, milliseconds times: [Double], name: String) throws -> (mp4: String, raw: String) {
        let mp4 = "\(directory)/\(name).mp4", raw = "\(directory)/\(name).\(codec == .h264 ? "h264" : "h265")"
        let sink = FileSink(path: mp4, overwrite: true)
        try sink.open()
        let writer = FragmentedMP4Writer(codec: codec, sink: sink, framesPerSecond: 30)
        for (unit, ms) in zip(units, times) {
            let c = pool.take()
            c.fill { $0 = unit.bytes }
            c.isIDR = unit.idr
            c.presentationTimeNanoseconds = 5_000_000_000 + UInt64(ms * 1_000_000)
            try writer.write(c)
        }
        try writer.finish()
        _ = try sink.close(keep: true)
        try Data(units.flatMap(\.bytes)).write(to: URL(fileURLWithPath: raw))
        return (mp4, raw)
    }

    /// Each decoded frame's MD5, in order (ffmpeg's framemd5; every decoded frame, none dropped or
    /// repeated for its time).
    func frameHashes(_ path: String) throws -> [String] {
        try run("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-fps_mode", "passthrough", "-f", "framemd5", "-"]).split(separator: "\n")
            .filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    func packetTimes(_ path: String) throws -> [Double] {
        try run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path])
            .split(separator: "\n").compactMap { Double($0).map { $0 * 1000 } }
    }

    func syncSamples(_ path: String) throws -> String {
        try run("/usr/bin/python3", ["\(Self.tools)/container-keys.py", path]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func streamField(_ path: String, _ field: String) throws -> String {
        try run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=\(field)", "-of", "csv=p=0", path])
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// 75 frames at 30 fps, frame 40 dropped by the camera (its time is a gap): every frame decodes from
    /// the MP4 to the same picture as from the raw stream, at its own time, the IDRs (0, 30, 60) and
    /// only they marked sync, under the sample entry the codec wants.
    func checkRoundTrip(_ codec: VideoCodec) throws {
        let units = try accessUnits(codec, frames: 75)
        XCTAssertEqual(units.count, 75, "ffmpeg's stream split into access units")
        XCTAssertEqual(units.indices.filter { units[$0].idr }, [0, 30, 60])
        let times = units.indices.map { Double($0 >= 40 ? $0 + 1 : $0) * 1000 / 30 }
        let (mp4, raw) = try write(units, codec: codec, milliseconds: times, name: "round-trip")
        let expected = try frameHashes(raw)
        XCTAssertEqual(expected.count, 75, "ffmpeg decodes every frame of the raw stream")
        XCTAssertEqual(try frameHashes(mp4), expected, "\(codec): every frame of the MP4 decodes to the raw stream's picture")
        let read = try packetTimes(mp4)
        XCTAssertEqual(read.count, 75)
        for (got, want) in zip(read, times) {
            XCTAssertEqual(got, want, accuracy: 0.02, "\(codec): each frame at its capture time, the dropped one a gap: \(read)")
        }
        XCTAssertEqual(try syncSamples(mp4), "75: 0 30 60", "\(codec): the file's tables mark the IDRs sync")
        XCTAssertEqual(try streamField(mp4, "codec_tag_string,width,height"), codec == .h264 ? "avc1,320,240" : "hvc1,320,240")
        // The last frame lasts a nominal frame: the file's duration is its 76 frame intervals.
        let duration = try run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", mp4])
        XCTAssertEqual(Double(duration.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, 76.0 / 30, accuracy: 0.002)
    }

    func testAnH264FileDecodesFrameForFrameAsItsRawStreamAtItsCaptureTimes() throws {
        try checkRoundTrip(.h264)
    }

    func testAnH265FileDecodesFrameForFrameAsItsRawStreamAtItsCaptureTimes() throws {
        try checkRoundTrip(.hevc)
    }

    /// A GOP of 90 frames: a fragment at least every second all the same, so a file cut after any
    /// fragment (SIGKILL) plays whole to there. Each prefix of the file that ends on a fragment decodes
    /// to the raw stream's first frames (ffmpeg), and such prefixes come every 30 frames.
    func testAFragmentEverySecondWhenIDRsAreFarther() throws {
        var units = try accessUnits(.h264, frames: 90)
        units = units.enumerated().map { ($0.element.bytes, $0.element.idr && $0.offset == 0) }
        // libx264's IDR 30 and 60 become ordinary pictures to the writer: only the first is sync.
        let (mp4, raw) = try write(units, codec: .h264, milliseconds: units.indices.map { Double($0) * 1000 / 30 }, name: "long-gop")
        XCTAssertEqual(try syncSamples(mp4), "90: 0")
        // The moof offsets, from the file's top-level boxes.
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: mp4)))
        var offset = 0, fragmentEnds: [Int] = []
        while offset + 8 <= bytes.count {
            let size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            offset += max(size, 8)
            if type == "mdat" { fragmentEnds.append(offset) }
        }
        XCTAssertEqual(fragmentEnds.count, 3, "a fragment a second")
        let all = try frameHashes(raw)
        for (index, end) in fragmentEnds.enumerated() {
            let cut = "\(directory)/cut-\(index).mp4"
            try Data(bytes.prefix(end)).write(to: URL(fileURLWithPath: cut))
            XCTAssertEqual(try frameHashes(cut), Array(all.prefix(30 * (index + 1))), "the file cut after fragment \(index + 1)")
        }
    }

    /// A camera whose clock stands still and that sends one IDR: every frame at the same capture time. The
    /// fragment is cut at its byte bound (here 20 000 bytes) rather than growing, each `mdat` at most the
    /// bound plus one access unit, and every frame still decodes to the raw stream's picture.
    func testAFrozenClockWithoutIDRsStillCutsFragmentsAtTheirByteBound() throws {
        var units = try accessUnits(.h264, frames: 60)
        units = units.enumerated().map { ($0.element.bytes, $0.element.idr && $0.offset == 0) }
        let mp4 = "\(directory)/frozen.mp4", raw = "\(directory)/frozen.h264"
        let sink = FileSink(path: mp4, overwrite: true)
        try sink.open()
        let writer = FragmentedMP4Writer(sink: sink, framesPerSecond: 30, maximumFragmentBytes: 20_000)
        for unit in units {
            let c = pool.take()
            c.fill { $0 = unit.bytes }
            c.isIDR = unit.idr
            c.presentationTimeNanoseconds = 7_000_000_000
            try writer.write(c)
        }
        try writer.finish()
        _ = try sink.close(keep: true)
        try Data(units.flatMap(\.bytes)).write(to: URL(fileURLWithPath: raw))
        let largest = units.map { $0.bytes.count + 16 }.max() ?? 0
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: mp4)))
        var offset = 0, mdats: [Int] = []
        while offset + 8 <= bytes.count {
            let size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            if String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self) == "mdat" { mdats.append(size - 8) }
            offset += max(size, 8)
        }
        let total = units.map(\.bytes.count).reduce(0, +)
        XCTAssertGreaterThanOrEqual(mdats.count, total / (20_000 + largest), "fragments cut by size: \(mdats)")
        XCTAssertTrue(mdats.allSatisfy { $0 < 20_000 + largest }, "each fragment at most the bound and one access unit: \(mdats)")
        XCTAssertEqual(writer.clampedTimestamps, 59)
        XCTAssertEqual(try frameHashes(mp4), try frameHashes(raw), "every frame decodes as from the raw stream")
    }

    func testTimesThatGoBackOrStandStillAreMovedJustPastThePreviousOneAndCounted() throws {
        let units = try accessUnits(.h264, frames: 5)
        let mp4 = "\(directory)/clock.mp4"
        let sink = FileSink(path: mp4, overwrite: true)
        try sink.open()
        let writer = FragmentedMP4Writer(sink: sink, framesPerSecond: 30)
        for (unit, ms) in zip(units, [1000, 1033, 1033, 983, 1100] as [UInt64]) {
            let c = pool.take()
            c.fill { $0 = unit.bytes }
            c.isIDR = unit.idr
            c.presentationTimeNanoseconds = ms * 1_000_000
            try writer.write(c)
        }
        try writer.finish()
        _ = try sink.close(keep: true)
        XCTAssertEqual(writer.clampedTimestamps, 2)
        let times = try packetTimes(mp4)
        XCTAssertEqual(times.count, 5, "\(times)")
        XCTAssertEqual((times.last ?? 0) - times[0], 100, accuracy: 0.02, "the time after the jump is kept")
        XCTAssertEqual(zip(times, times.dropFirst()).filter { $0.1 <= $0.0 }.count, 0, "\(times) go forward")
    }

    func testAFirstFrameWithoutParameterSetsIsAnErrorNamingThem() throws {
        let sink = FileSink(path: "\(directory)/bad.mp4", overwrite: true)
        try sink.open()
        let writer = FragmentedMP4Writer(sink: sink, framesPerSecond: 30)
        let c = pool.take()
        c.fill { $0 = [0, 0, 0, 1, 0x65, 0x88, 0x84, 0x00] }
        c.isIDR = true
        XCTAssertThrowsError(try writer.write(c)) { error in
            XCTAssertTrue("\(error)".contains("carries no SPS"), "\(error)")
        }
        _ = try sink.close(keep: false)
    }

    /// Annex B to length-prefixed: 3- and 4-byte start codes, trailing zero bytes belong to no unit.
    func testAnnexBBecomesLengthPrefixedUnits() {
        let annexB: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 0, 1, 0x65, 4, 5, 6]
        var output: [UInt8] = [9]
        let added = annexB.withUnsafeBytes { AVCC.appendLengthPrefixed(fromAnnexB: $0, to: &output) }
        XCTAssertEqual(output, [9, 0, 0, 0, 3, 0x67, 1, 2, 0, 0, 0, 2, 0x68, 3, 0, 0, 0, 4, 0x65, 4, 5, 6])
        XCTAssertEqual(added, output.count - 1)
    }
}
