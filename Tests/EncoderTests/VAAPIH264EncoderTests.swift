import Bitstream
import Capture
@testable import Encoder
import Glibc
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

    /// Every buffer goes back to the pool as soon as `encode` returns (it is uploaded by then),
    /// forced keyframes are IDRs with SPS+PPS, and the upload copies each frame's bytes once.
    func testUploadRecyclesAtOnceAndForcedKeyframesAreIDRs() throws {
        let device = try openDevice()
        for (width, height) in [(1920, 1080), (650, 482)] {
            let size = FrameSize(width: width, height: height)
            let settings = EncoderSettings(size: size, framesPerSecond: 30, keyframeInterval: 4)
            let encoder = try VAAPIH264Encoder(settings: settings, device: device)
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
            XCTAssertEqual(encoder.uploadedBytes, frames * frameBytes, "one CPU pass: each byte of each frame copied once")
            let perFrame = Double(encoder.uploadNanoseconds) / Double(frames) / 1e6
            print("VAAPI upload \(width)x\(height): \(frameBytes) bytes per frame copied once, "
                + "\(String(format: "%.2f", perFrame)) ms per frame (get surface + map + copy + unmap), direct: \(encoder.uploadIsDirect)")
        }
    }

    func testProfileIsTheBestTheDriverHasAtOrBelowTheOneAskedFor() throws {
        let device = try openDevice()
        XCTAssertEqual(VAAPIH264Encoder.chooseProfile(.high, in: device.capabilities)?.camrecProfile, .baseline)
        XCTAssertEqual(VAAPIH264Encoder.chooseProfile(.baseline, in: device.capabilities)?.camrecProfile, .baseline)
    }
}
