import Bitstream
import Foundation
import XCTest

/// camrec's stream contract, checked with our own scanner, independently of the inspector.
func assertStreamContract(_ path: String, idrEvery interval: Int, frames: Int, file: StaticString = #filePath, line: UInt = #line) throws {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let units = AnnexBScanner.units(in: bytes)
    XCTAssertFalse(units.isEmpty, "no NAL units", file: file, line: line)
    XCTAssertEqual(units.filter { $0.startCodeLength != 4 }.count, 0, "every start code is 4 bytes", file: file, line: line)
    XCTAssertEqual(Array(bytes.prefix(4)), [0, 0, 0, 1], file: file, line: line)
    // Walk access units: SPS and PPS must come before the first IDR slice of every IDR picture.
    var sawSPS = false, sawPPS = false, inIDR = false
    var idrPictures = 0
    for unit in units {
        switch unit.type {
        case .sps: sawSPS = true
        case .pps: sawPPS = true
        case .idrSlice:
            if !inIDR {
                XCTAssertTrue(sawSPS && sawPPS, "SPS+PPS before IDR #\(idrPictures)", file: file, line: line)
                idrPictures += 1
            }
            inIDR = true
            sawSPS = false
            sawPPS = false
        case .nonIDRSlice:
            inIDR = false
        default: break
        }
    }
    var inspector = StreamInspector()
    inspector.append(bytes)
    let report = inspector.finish()
    XCTAssertTrue(report.contractHolds, report.render(verbose: false), file: file, line: line)
    XCTAssertEqual(report.frameCount, frames, file: file, line: line)
    let expectedIDRs = Array(stride(from: 0, to: frames, by: interval))
    XCTAssertEqual(report.idrFrameIndices, expectedIDRs, file: file, line: line)
    XCTAssertEqual(idrPictures, expectedIDRs.count, file: file, line: line)
}
