import Bitstream
import Foundation
import XCTest

/// What Tests/tools/annexb-check.py (a Python Annex-B scanner sharing no code with camrec) found.
struct IndependentStreamReport: Decodable {
    var ok: Bool
    var pictures: Int
    var idr_pictures: [Int]
    var problems: [String]
}

enum IndependentChecker {
    /// Tests/tools/annexb-check.py, found from this source file's place in the repository.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("tools/annexb-check.py").path

    static func check(_ path: String, arguments: [String] = []) throws -> (status: Int32, report: IndependentStreamReport?, output: String) {
        let r = try Tools.run("python3", [script, "--json"] + arguments + [path])
        return (r.status, try? JSONDecoder().decode(IndependentStreamReport.self, from: r.stdout), r.stdoutText + r.stderr)
    }
}

/// camrec's stream contract, checked by truths from outside camrec: the independent Python checker
/// (4-byte start codes, SPS+PPS right before every IDR slice, one slice per picture, the picture count
/// and IDR grid) and ffprobe's decoder (which frames are key frames), beside camrec's own inspector.
func assertStreamContract(_ path: String, idrEvery interval: Int, frames: Int, codec: VideoCodec = .h264,
                          file: StaticString = #filePath, line: UInt = #line) throws {
    let expectedIDRs = Array(stride(from: 0, to: frames, by: interval))
    let independent = try IndependentChecker.check(path, arguments: ["--frames", "\(frames)", "--idr-interval", "\(interval)"]
                                                       + (codec == .hevc ? ["--hevc"] : []))
    XCTAssertEqual(independent.status, 0, "annexb-check: \(independent.output)", file: file, line: line)
    XCTAssertEqual(independent.report?.pictures, frames, "annexb-check's picture count", file: file, line: line)
    XCTAssertEqual(independent.report?.idr_pictures, expectedIDRs, "annexb-check's IDR positions", file: file, line: line)
    XCTAssertEqual(try Tools.keyFrameIndices(path), expectedIDRs, "ffprobe's key frames", file: file, line: line)

    var inspector = StreamInspector(codec: codec)
    inspector.append([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    let report = inspector.finish()
    XCTAssertEqual(report.codec, codec, file: file, line: line)
    XCTAssertTrue(report.contractHolds, report.render(verbose: false), file: file, line: line)
    XCTAssertEqual(report.frameCount, frames, file: file, line: line)
    XCTAssertEqual(report.idrFrameIndices, expectedIDRs, file: file, line: line)
}

/// The contract where frames were skipped or dropped, so the IDR grid moved: the same independent checks
/// (annexb-check, ffprobe) and camrec's inspector, the picture count exact, the first picture an IDR, and
/// no two IDRs further apart than `maximumIDRGap` pictures (a forced IDR a branch skipped is forced at its
/// next frame). ffprobe's key frames and both checkers' IDR positions must agree.
func assertStreamContract(_ path: String, frames: Int, maximumIDRGap: Int, codec: VideoCodec = .h264,
                          file: StaticString = #filePath, line: UInt = #line) throws {
    let independent = try IndependentChecker.check(path, arguments: ["--frames", "\(frames)"] + (codec == .hevc ? ["--hevc"] : []))
    XCTAssertEqual(independent.status, 0, "annexb-check: \(independent.output)", file: file, line: line)
    XCTAssertEqual(independent.report?.pictures, frames, "annexb-check's picture count", file: file, line: line)
    let idrs = try XCTUnwrap(independent.report?.idr_pictures, file: file, line: line)
    XCTAssertEqual(idrs.first, 0, "the first picture is an IDR", file: file, line: line)
    let gaps = zip(idrs, idrs.dropFirst()).map { $1 - $0 } + [frames - (idrs.last ?? 0)]
    XCTAssertLessThanOrEqual(gaps.max() ?? 0, maximumIDRGap, "IDRs at \(idrs)", file: file, line: line)
    XCTAssertEqual(try Tools.keyFrameIndices(path), idrs, "ffprobe's key frames", file: file, line: line)
    var inspector = StreamInspector(codec: codec)
    inspector.append([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    let report = inspector.finish()
    XCTAssertTrue(report.contractHolds, report.render(verbose: false), file: file, line: line)
    XCTAssertEqual(report.frameCount, frames, file: file, line: line)
    XCTAssertEqual(report.idrFrameIndices, idrs, file: file, line: line)
}

/// `data` (4-byte start codes) without camrec's timing notes: the NAL units whose first bytes hold
/// camrec's UUID (c4 a3 e1 f2 6d 1b …), an H.264 SEI or an H.265 prefix SEI. Read here, not with camrec's code.
func withoutTimingNotes(_ data: Data) -> Data {
    let bytes = [UInt8](data)
    let uuidHead: [UInt8] = [0xC4, 0xA3, 0xE1, 0xF2, 0x6D, 0x1B]
    var codes: [Int] = []
    var index = 0
    while index + 4 <= bytes.count {
        if bytes[index] == 0 && bytes[index + 1] == 0 && bytes[index + 2] == 0 && bytes[index + 3] == 1 {
            codes.append(index)
            index += 4
        } else {
            index += 1
        }
    }
    var out = Data()
    for (k, start) in codes.enumerated() {
        let end = k + 1 < codes.count ? codes[k + 1] : bytes.count
        let head = bytes[min(start + 4, end)..<min(start + 16, end)]
        if head.firstRange(of: uuidHead) != nil { continue }
        out += bytes[start..<end]
    }
    return out
}
