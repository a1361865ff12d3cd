import Bitstream
import Capture
import Foundation
import Frames
@testable import Encoder
import Glibc
import Threading
import XCTest

/// The VA-API backend against the test VA driver (Tests/fixtures/va-test-driver), through X11.
/// Skipped unless the environment selects that driver and a display, as Tests/suites/vaapi-host.sh
/// does (that suite is the one CI depends on):
///   LIBVA_DRIVER_NAME=camrec_test LIBVA_DRIVERS_PATH=<dir> CAMREC_VA_TEST_DISPLAY=:99 swift test --filter VAAPI
final class VAAPIH264EncoderTests: XCTestCase {
    private func openDevice() throws -> VAAPIDevice {
        guard getenv("LIBVA_DRIVER_NAME").map({ String(cString: $0) }) == "camrec_test",
              let display = getenv("CAMREC_VA_TEST_DISPLAY").map({ String(cString: $0) }) else {
            throw XCTSkip("set LIBVA_DRIVER_NAME=camrec_test, LIBVA_DRIVERS_PATH and CAMREC_VA_TEST_DISPLAY")
        }
        return try VAAPIDevice.open(display)
    }

    /// With an ordinary pool (the copy path, used when mapping failed at take time): every buffer
    /// goes back to the pool as soon as `encode` returns (it is uploaded by then), forced keyframes
    /// are IDRs with SPS+PPS, and the upload copies each frame's bytes once.
    func testUploadRecyclesAtOnceAndForcedKeyframesAreIDRs() throws {
        let device = try openDevice()
        for (width, height) in [(1920, 1080), (650, 482)] {
            let size = FrameSize(width: width, height: height)
            let settings = EncoderSettings(size: size, framesPerSecond: 30, keyframeInterval: 4)
            let encoder = try VAAPIEncoder(settings: settings, device: device)
            let pool = PixelBufferPool(format: encoder.inputFormat, width: width, height: height,
                                       capacity: encoder.maximumBuffersInFlight)
            let source = TestPatternSource(size: size, fps: 30, realTime: false)
            try source.start(pool: pool)
            var packets: [(sequence: UInt64, key: Bool, types: [NALUnitType])] = []
            encoder.onBufferDone = { $0.recycle() }
            encoder.onPacket = { p in
                packets.append((p.sequence, p.isKeyframe, AnnexBScanner.units(in: Array(p.data)).map(\.type)))
            }
            try encoder.start()
            XCTAssertEqual(encoder.chosenProfile?.camrecProfile, .baseline, "the test driver offers Constrained Baseline only")
            XCTAssertTrue(encoder.uploadIsDirect, "the test driver supports vaDeriveImage")
            let frames = 30
            for i in 0..<frames {
                let frame = try XCTUnwrap(source.nextFrame())
                try encoder.encode(frame, forceKeyframe: i % 4 == 0)
                XCTAssertEqual(pool.freeCount, pool.capacity, "buffer \(i) is back in the pool when encode returns")
            }
            try encoder.flush()
            XCTAssertEqual(packets.map(\.sequence), (0..<UInt64(frames)).map { $0 })
            XCTAssertEqual(packets.filter(\.key).map(\.sequence), stride(from: 0, to: UInt64(frames), by: 4).map { $0 })
            for p in packets where p.key {
                XCTAssertTrue(p.types.contains(.sps) && p.types.contains(.pps) && p.types.contains(.idrSlice), "\(p.types)")
            }
            let frameBytes = width * height + (width + 1) / 2 * 2 * ((height + 1) / 2)
            XCTAssertEqual(encoder.uploadedFrames, frames)
            XCTAssertEqual(encoder.framesCopied, frames)
            XCTAssertEqual(encoder.framesWrittenInPlace, 0)
            XCTAssertEqual(encoder.uploadedBytes, frames * frameBytes, "each byte of each frame copied once")
            let perFrame = Double(encoder.uploadNanoseconds) / Double(frames) / 1e6
            print("VAAPI upload \(width)x\(height), ordinary pool: \(frameBytes) bytes per frame copied once, "
                + "\(String(format: "%.2f", perFrame)) ms per frame (get surface + map + copy + unmap), direct: \(encoder.uploadIsDirect)")
        }
    }

    /// The encoder's own pool lends mapped surfaces: the source writes into them, `encode` only
    /// unmaps and submits. A buffer recycled unencoded gives its surface back (taken again, the
    /// same surfaces come back: none leaks), and the pool runs out like an ordinary one.
    func testSurfacePoolWritesInPlaceAndReleasesSurfacesOfUnencodedBuffers() throws {
        let device = try openDevice()
        let (width, height) = (650, 482)
        let size = FrameSize(width: width, height: height)
        let encoder = try VAAPIEncoder(settings: EncoderSettings(size: size, framesPerSecond: 30, keyframeInterval: 4),
                                           device: device)
        try encoder.start()
        let pool = encoder.makePool(width: width, height: height, capacity: 3)
        let backing = try XCTUnwrap(encoder.backing)
        XCTAssertTrue(pool.backing === backing)
        XCTAssertFalse(pool.hasStableMemory, "planes move at every take: no V4L2 USERPTR into this pool")
        XCTAssertTrue(PixelBufferPool(format: .nv12, width: 16, height: 16, capacity: 1).hasStableMemory)

        let taken = (0..<3).compactMap { _ in pool.tryTake() }
        XCTAssertEqual(taken.count, 3)
        XCTAssertNil(pool.tryTake(), "the pool never grows")
        XCTAssertEqual(pool.exhaustedCount, 1)
        var surfaces = Set<UInt>()
        for buffer in taken {
            XCTAssertFalse(buffer.isInOwnMemory)
            XCTAssertEqual(buffer.planes.count, 2)
            XCTAssertEqual(buffer.planes[1].width, 650)
            XCTAssertEqual(buffer.planes[1].height, 241)
            XCTAssertGreaterThanOrEqual(buffer.planes[0].stride, width)
            surfaces.insert(try XCTUnwrap(backing.surfaceID(bufferIndex: buffer.index)))
        }
        XCTAssertEqual(surfaces.count, 3)
        taken.forEach { $0.recycle() }
        XCTAssertEqual(taken.compactMap { backing.surfaceID(bufferIndex: $0.index) }, [], "recycled unencoded: surfaces released")
        XCTAssertEqual(backing.statistics.releasedUnencoded, 3)
        let again = (0..<3).compactMap { _ in pool.tryTake() }
        XCTAssertEqual(Set(again.compactMap { backing.surfaceID(bufferIndex: $0.index) }), surfaces,
                       "the released surfaces are reused, no new ones made")
        again.forEach { $0.recycle() }

        var packets: [UInt64] = []
        encoder.onBufferDone = { $0.recycle() }
        encoder.onPacket = { packets.append($0.sequence) }
        let source = TestPatternSource(size: size, fps: 30, realTime: false)
        try source.start(pool: pool)
        let frames = 8
        for i in 0..<frames {
            let frame = try XCTUnwrap(source.nextFrame())
            XCTAssertFalse(frame.isInOwnMemory, "the source wrote into a mapped surface")
            try encoder.encode(frame, forceKeyframe: i % 4 == 0)
            XCTAssertEqual(pool.freeCount, pool.capacity, "buffer \(i) is back in the pool when encode returns")
            XCTAssertNil(backing.surfaceID(bufferIndex: frame.index), "the encoder holds the surface now, not the buffer")
        }
        try encoder.flush()
        XCTAssertEqual(packets, (0..<UInt64(frames)).map { $0 })
        XCTAssertEqual(encoder.framesWrittenInPlace, frames)
        XCTAssertEqual(encoder.framesCopied, 0)
        XCTAssertEqual(encoder.uploadedBytes, frames * (width * height + width * ((height + 1) / 2)))
        XCTAssertEqual(backing.statistics.releasedUnencoded, 6, "only the 2 x 3 recycled unencoded above; encoded buffers' surfaces went to the encoder")
        XCTAssertTrue(encoder.uploadSummary.hasPrefix("8 frames took 1 CPU pass (source converted straight into the VA surface"),
                      encoder.uploadSummary)
        print("VAAPI upload \(width)x\(height), surface pool: \(encoder.uploadSummary)")
    }

    /// `VAAPISurfaceBacking`'s invariant, that slot `i` (surface, mapping, VA image) is touched only by
    /// whoever holds pool buffer `i`, across threads as a recording runs it: a capture thread takes buffers
    /// (attach: surface and mapping made there) and writes the pattern into them; an encoder thread unmaps
    /// and submits them (finishUpload), and each thread recycles some unencoded (detach, on either side of
    /// the hand-off). For each upload path: derived mappings, VA images only, and derived mappings that
    /// start failing mid-run (those frames through a VA image made on the capture thread, put on the
    /// encoder's). Truth from outside camrec: ffmpeg decodes the stream the test driver made (lossless),
    /// and each picture must equal, byte for byte, the pattern frame of its number drawn in ordinary memory.
    /// scripts/tsan.sh leaves this class out (it skips without the driver); run it under TSan by hand with
    /// the environment above.
    func testSurfaceSlotsHandedBetweenCaptureAndEncoderThreadsKeepEachFramesPixels() throws {
        let (width, height) = (640, 480)
        let size = FrameSize(width: width, height: height)
        let frames = 60
        // Unencoded recycles, by frame number: the capture thread's (before the hand-off) and the encoder thread's.
        let droppedByCapture: (UInt64) -> Bool = { $0 % 5 == 3 }
        let droppedByEncoder: (UInt64) -> Bool = { $0 % 7 == 6 }
        let encodedNumbers = (0..<UInt64(frames)).filter { !droppedByCapture($0) && !droppedByEncoder($0) }
        let frameBytes = width * height * 3 / 2

        // The reference: each frame number's pattern in ordinary memory, as tightly packed NV12.
        let referencePool = PixelBufferPool(format: .nv12, width: width, height: height, capacity: 1)
        let reference = TestPatternSource(size: size, fps: 30, realTime: false)
        try reference.start(pool: referencePool)
        var expected: [UInt64: [UInt8]] = [:]
        for _ in 0..<frames {
            let frame = try XCTUnwrap(reference.nextFrame())
            if encodedNumbers.contains(frame.sequence) {
                var bytes: [UInt8] = []
                bytes.reserveCapacity(frameBytes)
                for plane in frame.planes.prefix(2) {
                    for row in 0..<plane.height {
                        bytes.append(contentsOf: UnsafeBufferPointer(start: plane.base + row * plane.stride, count: plane.width))
                    }
                }
                expected[frame.sequence] = bytes
            }
            frame.recycle()
        }

        for (mode, environment) in [("derived mappings", [String: String]()),
                                    ("VA images only", ["CAMREC_TEST_VA_NO_DERIVE": "1"]),
                                    ("derived mappings failing after 20", ["CAMREC_TEST_VA_DERIVE_FAIL_AFTER": "20"])] {
            // The test driver reads its hooks when the display is initialised, in openDevice.
            for (name, value) in environment { setenv(name, value, 1) }
            defer { for name in environment.keys { unsetenv(name) } }
            let device = try openDevice()
            let encoder = try VAAPIEncoder(settings: EncoderSettings(size: size, framesPerSecond: 30, keyframeInterval: 30),
                                           device: device)
            try encoder.start()
            let pool = encoder.makePool(width: width, height: height, capacity: 4)
            let backing = try XCTUnwrap(encoder.backing, mode)
            let source = TestPatternSource(size: size, fps: 30, realTime: false)
            try source.start(pool: pool)
            var stream: [UInt8] = []
            encoder.onBufferDone = { $0.recycle() }
            encoder.onPacket = { stream.append(contentsOf: $0.data) }

            let handOff = BlockingQueue<PixelBuffer>(capacity: 2)
            let capture = WorkerThread(name: "test-capture") {
                defer { handOff.close() }
                for _ in 0..<frames {
                    guard let frame = try? source.nextFrame() else { return }
                    if droppedByCapture(frame.sequence) { frame.recycle() } else if !handOff.push(frame) { frame.recycle() }
                }
            }
            capture.start()
            var encoded: [UInt64] = [], inOwnMemory = 0
            while let frame = handOff.pop() {
                if droppedByEncoder(frame.sequence) { frame.recycle(); continue }
                if frame.isInOwnMemory { inOwnMemory += 1 }
                // Its number before encode: the buffer is back in the pool, the capture thread's, when encode returns.
                encoded.append(frame.sequence)
                try encoder.encode(frame, forceKeyframe: encoded.count == 1)
            }
            capture.join()
            try encoder.flush()
            source.stop()

            XCTAssertEqual(encoder.uploadIsDirect, environment["CAMREC_TEST_VA_NO_DERIVE"] == nil, "\(mode): the upload path")
            XCTAssertEqual(encoded, encodedNumbers, mode)
            XCTAssertEqual(inOwnMemory, 0, "\(mode): every frame was written into a surface's mapping")
            XCTAssertEqual(encoder.framesWrittenInPlace, encodedNumbers.count, mode)
            XCTAssertEqual(backing.statistics.releasedUnencoded, frames - encodedNumbers.count,
                           "\(mode): each frame recycled unencoded, on either thread, gave its surface back")
            XCTAssertEqual(backing.statistics.failures, 0, mode)
            let fallbacks = backing.statistics.imageFallbacks
            if environment["CAMREC_TEST_VA_DERIVE_FAIL_AFTER"] != nil {
                XCTAssertTrue(fallbacks > 0 && fallbacks < encodedNumbers.count, "\(mode): \(fallbacks) frames through a VA image")
            } else {
                XCTAssertEqual(fallbacks, 0, mode)
            }

            let decoded = try Self.decodeWithFFmpeg(stream, frameBytes: frameBytes)
            XCTAssertEqual(decoded.count, encodedNumbers.count, "\(mode): ffmpeg's picture count")
            var differing: [UInt64] = []
            for (number, picture) in zip(encodedNumbers, decoded) where picture != expected[number] { differing.append(number) }
            XCTAssertEqual(differing, [], "\(mode): frames whose decoded picture is not the pattern frame of their number")
            print("VAAPI surface slots across two threads, \(mode): \(encodedNumbers.count) of \(frames) frames encoded, "
                + "\(frames - encodedNumbers.count) recycled unencoded, \(encoder.uploadIsDirect ? "\(fallbacks)" : "all") through a VA image, "
                + "\(decoded.count - differing.count) decoded pictures identical to their pattern frame")
        }
    }

    /// The NV12 pictures ffmpeg decodes from an H.264 stream, one array of `frameBytes` each.
    private static func decodeWithFFmpeg(_ stream: [UInt8], frameBytes: Int) throws -> [[UInt8]] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("camrec-vaapi-slots-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in.h264"), output = dir.appendingPathComponent("out.nv12")
        try Data(stream).write(to: input)
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        ffmpeg.arguments = ["ffmpeg", "-v", "error", "-f", "h264", "-i", input.path, "-f", "rawvideo", "-pix_fmt", "nv12", "-y", output.path]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        XCTAssertEqual(ffmpeg.terminationStatus, 0, "ffmpeg decoding the stream")
        let bytes = [UInt8](try Data(contentsOf: output))
        return stride(from: 0, to: bytes.count - frameBytes + 1, by: frameBytes).map { Array(bytes[$0..<$0 + frameBytes]) }
    }

    func testProfileIsTheBestTheDriverHasAtOrBelowTheOneAskedFor() throws {
        let device = try openDevice()
        XCTAssertEqual(VAAPIEncoder.chooseProfile(.h264, .high, in: device.capabilities)?.camrecProfile, .baseline)
        XCTAssertEqual(VAAPIEncoder.chooseProfile(.h264, .baseline, in: device.capabilities)?.camrecProfile, .baseline)
        XCTAssertEqual(VAAPIEncoder.chooseProfile(.hevc, .high, in: device.capabilities)?.name, "VAProfileHEVCMain",
                       "H.265 is Main whatever --profile says")
    }
}
