import Foundation
import Hub
import XCTest

@testable import Outputs

/// A file output at a camera's loss (`--on-camera-lost wait`): the file ends after the last access unit
/// before the gap, at once, not when the camera comes back; the first IDR after it opens the next file.
final class RecordingFileGapTests: XCTestCase {
    private let chunks = StreamChunkPool()

    private func publish(_ hub: StreamHub, sequence: UInt64, idr: Bool) {
        let chunk = chunks.take()
        chunk.fill { bytes in
            bytes.removeAll(keepingCapacity: true)
            bytes += [0, 0, 0, 1, idr ? 0x65 : 0x41, UInt8(truncatingIfNeeded: sequence)]
        }
        chunk.isIDR = idr
        chunk.sequence = sequence
        chunk.presentationTimeNanoseconds = sequence * 33_000_000
        chunk.retain()
        hub.publish(chunk)
    }

    func testTheFileEndsAtTheGapAndTheNextIDROpensTheNextFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gap-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let hub = StreamHub(label: "h264", keyframes: KeyframeGate())
        let output = RecordingFileOutput(configuration: .init(pattern: try OutputNamePattern("\(dir)/rec.h264"), device: "video0",
                                                              overwrite: false))
        try output.open(hub: hub)
        for n in 0..<5 { publish(hub, sequence: UInt64(n), idr: n == 0) }
        output.endFileAtSourceGap()
        let deadline = Date().addingTimeInterval(10)
        while output.finishedFiles.isEmpty && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(output.finishedFiles.map(\.path), ["\(dir)/rec.h264"], "ended at the gap, before anything came back")
        XCTAssertEqual(output.finishedFiles.first?.frames, 5, "with every access unit before it")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["rec.h264"], "no file open during the gap")

        publish(hub, sequence: 5, idr: false)  // a straggler without an IDR in front: nothing to start a file with
        for n in 6..<9 { publish(hub, sequence: UInt64(n), idr: n == 6) }
        hub.close()
        _ = output.finish()
        XCTAssertEqual(output.finishedFiles.map(\.path), ["\(dir)/rec.h264", "\(dir)/rec-2.h264"])
        XCTAssertEqual(output.finishedFiles.last?.frames, 3, "the next file from the first IDR after the gap")
        let second = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/rec-2.h264"))
        XCTAssertEqual(second.prefix(5), Data([0, 0, 0, 1, 0x65]), "it starts with the IDR")
    }
}
