@testable import Containers
import Hub
import Foundation
import Outputs
import XCTest

/// The container writer against real libavformat and real files, judged by ffprobe.
final class LibavContainerWriterTests: XCTestCase {
    // SPS and PPS of a real camrec recording (libx264, High, 1280x720); the muxers read the SPS
    // for the sample entry but never decode slices, so the slices are short stand-ins.
    static let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1F, 0xAC, 0xB4, 0x02, 0x80, 0x2D, 0xD0, 0x80, 0x00,
                               0x00, 0x03, 0x00, 0x80, 0x00, 0x00, 0x1E, 0x47, 0x8C, 0x19, 0x50]
    static let pps: [UInt8] = [0x68, 0xEF, 0x3C, 0xB0]
    static let startCode: [UInt8] = [0, 0, 0, 1]

    let pool = StreamChunkPool()
    var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "camrec-containers-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func chunk(idr: Bool, milliseconds: UInt64) -> StreamChunk {
        let c = pool.take()
        if idr {
            c.fill { $0 = Self.startCode + Self.sps + Self.startCode + Self.pps + Self.startCode + [0x65, 0x88, 0x84, 0x00, 0x21] }
        } else {
            c.fill { $0 = Self.startCode + [0x41, 0x9A, 0x02, 0x04, 0x80] }
        }
        c.isIDR = idr
        c.presentationTimeNanoseconds = milliseconds * 1_000_000
        return c
    }

    func testTheFormatComesFromTheExtensionAndUnknownNamesStayRaw() {
        let expected: [(String, ContainerFormat)] = [
            ("out.mp4", .mp4), ("OUT.M4V", .mp4), ("a/b.c/clip.mov", .mov), ("x.mkv", .mkv), ("x.ts", .ts),
            ("x.m2ts", .ts), ("x.h264", .raw), ("x.264", .raw), ("noextension", .raw), ("dir.mp4/file", .raw),
            ("x.mp4.bak", .raw), (".mp4", .mp4), ("cam-%Y%m%d-{n}.mkv", .mkv),
        ]
        for (name, format) in expected {
            XCTAssertEqual(ContainerFormat(fileName: name), format, name)
        }
    }

    /// Presentation times in ms as ffprobe reads them back from `path`.
    func packetTimes(_ path: String) throws -> [Double] {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path]
        let out = Pipe()
        probe.standardOutput = out
        probe.standardError = FileHandle.nullDevice  // it tries to decode the stand-in slices
        try probe.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        XCTAssertEqual(probe.terminationStatus, 0, "ffprobe failed on \(path)")
        return text.split(separator: "\n").compactMap { Double($0).map { $0 * 1000 } }
    }

    func testTimesThatGoBackOrStandStillAreMovedJustPastThePreviousOneAndCounted() throws {
        for format in [ContainerFormat.mp4, .mkv] {
            let path = "\(directory)/clock.\(format.rawValue)"
            let sink = FileSink(path: path, overwrite: false)
            try sink.open()
            let writer = try LibavContainerWriter(format: format, sink: sink, framesPerSecond: 30)
            // The camera's clock stands still once, then jumps back 50 ms.
            for (idr, ms) in [(true, 1000), (false, 1033), (false, 1033), (false, 983), (false, 1100)] as [(Bool, UInt64)] {
                let c = chunk(idr: idr, milliseconds: ms)
                try writer.write(c)
            }
            try writer.finish()
            _ = try sink.close(keep: true)
            XCTAssertEqual(writer.clampedTimestamps, 2, "\(format)")
            let times = try packetTimes(path)
            XCTAssertEqual(times.count, 5, "\(format): \(times)")
            XCTAssertEqual(times.first.map { $0 - times[0] }, 0)
            XCTAssertEqual((times.last ?? 0) - times[0], 100, accuracy: 1.5, "\(format): the time after the jump is kept")
            XCTAssertEqual(zip(times, times.dropFirst()).filter { $0.1 <= $0.0 }.count, 0, "\(format): \(times) go forward")
        }
    }

    /// A sink that fails like a full disk once `limit` bytes are in.
    final class FillingSink: ByteSink {
        let label = "full.mp4"
        var written = 0
        let limit: Int
        init(limit: Int) { self.limit = limit }
        func open() throws {}
        func write(_ bytes: UnsafeRawBufferPointer) throws {
            guard written + bytes.count <= limit else { throw OutputError(.diskFull, "disk full writing full.mp4") }
            written += bytes.count
        }
        func commitBoundary() {}
        func close(keep: Bool) throws -> String? { nil }
    }

    func testASinkFailureInsideLibavformatComesBackAsTheSinksOwnError() throws {
        let sink = FillingSink(limit: 2000)
        let writer = try LibavContainerWriter(format: .mp4, sink: sink, framesPerSecond: 30)
        var caught: Error?
        for frame in 0..<200 where caught == nil {
            let c = chunk(idr: frame % 30 == 0, milliseconds: UInt64(frame) * 33)
            c.fill { $0 += [UInt8](repeating: 0x55, count: 100) }
            do { try writer.write(c) } catch { caught = error }
        }
        XCTAssertEqual((caught as? OutputError)?.kind, .diskFull, "\(String(describing: caught))")
        XCTAssertLessThanOrEqual(sink.written, 2000)
    }
}

/// `ContainerInspection.mp4End`: where an MP4 stops being whole, from its top-level box sizes.
final class MP4EndTests: XCTestCase {
    func box(_ type: String, _ payload: Int, large: Bool = false) -> [UInt8] {
        let size = payload + (large ? 16 : 8)
        let header: [UInt8] = large
            ? [0, 0, 0, 1] + Array(type.utf8) + (0..<8).reversed().map { UInt8(truncatingIfNeeded: size >> ($0 * 8)) }
            : (0..<4).reversed().map { UInt8(truncatingIfNeeded: size >> ($0 * 8)) } + Array(type.utf8)
        return header + [UInt8](repeating: 0xEE, count: payload)
    }

    func end(of bytes: [UInt8]) throws -> ContainerInspection.FileEnd? {
        let path = NSTemporaryDirectory() + "camrec-mp4end-\(UUID().uuidString).mp4"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return ContainerInspection.mp4End(path: path)
    }

    func testWholeBoxesEndWhole() throws {
        let file = box("ftyp", 16) + box("moov", 100) + box("moof", 40) + box("mdat", 1000, large: true)
        XCTAssertEqual(try end(of: file), .init(wholeBytes: file.count, cutBox: nil))
    }

    func testAnMdatCutShortTakesItsMoofWithIt() throws {
        let head = box("ftyp", 16) + box("moov", 100) + box("moof", 40) + box("mdat", 500)
        let file = head + box("moof", 40) + Array(box("mdat", 1000).prefix(300))
        XCTAssertEqual(try end(of: file), .init(wholeBytes: head.count, cutBox: "mdat"))
    }

    func testAFileEndingAfterAMoofOrInsideABoxHeaderIsCut() throws {
        let head = box("ftyp", 16) + box("moov", 100)
        XCTAssertEqual(try end(of: head + box("moof", 40)), .init(wholeBytes: head.count, cutBox: "moof"))
        XCTAssertEqual(try end(of: head + [0, 0, 1]), .init(wholeBytes: head.count, cutBox: "?"))
    }

    func testASizeOfZeroRunsToTheEndAndAnImpossibleSizeIsACut() throws {
        let head = box("ftyp", 16)
        XCTAssertEqual(try end(of: head + [0, 0, 0, 0] + Array("mdat".utf8) + [1, 2, 3]), .init(wholeBytes: head.count + 11, cutBox: nil))
        XCTAssertEqual(try end(of: head + [0, 0, 0, 4] + Array("free".utf8)), .init(wholeBytes: head.count, cutBox: "free"))
    }
}
