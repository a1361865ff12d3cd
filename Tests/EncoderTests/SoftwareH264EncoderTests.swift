import Bitstream
import Capture
import Frames
import Encoder
import TestSupport
import XCTest

final class SoftwareEncoderTests: XCTestCase {
    func testForcedKeyframesBecomeIDRsAndEveryBufferReturnsToThePool() throws {
        try XCTSkipUnless(SoftwareEncoder.isAvailable, "libavcodec has no libx264")
        let size = FrameSize(width: 320, height: 240)
        let settings = EncoderSettings(size: size, framesPerSecond: 30, keyframeInterval: 4, profile: .high, preset: "ultrafast")
        let encoder = try SoftwareEncoder(settings: settings)
        let pool = PixelBufferPool(format: encoder.inputFormat, width: size.width, height: size.height,
                                   capacity: encoder.maximumBuffersInFlight + 2)
        let source = TestPatternSource(size: size, fps: 30, realTime: false)
        try source.start(pool: pool)
        var packets: [(sequence: UInt64, key: Bool, bytes: [UInt8])] = []
        encoder.onBufferDone = { $0.recycle() }
        encoder.onPacket = { packets.append(($0.sequence, $0.isKeyframe, Array($0.data))) }
        try encoder.start()
        for i in 0..<10 {
            let frame = try XCTUnwrap(source.nextFrame())
            try encoder.encode(frame, forceKeyframe: i % 4 == 0)
        }
        try encoder.flush()
        XCTAssertEqual(pool.freeCount, pool.capacity, "the encoder gave every buffer back")
        XCTAssertEqual(packets.map(\.sequence), Array(0..<10))
        XCTAssertEqual(packets.filter(\.key).map(\.sequence), [0, 4, 8])
        for packet in packets {
            let types = AnnexBScanner.units(in: packet.bytes).map(\.type)
            XCTAssertEqual(types.contains(.idrSlice), packet.key, "frame \(packet.sequence): \(types)")
            if packet.key {
                XCTAssertTrue(types.contains(.sps) && types.contains(.pps))
            }
        }
    }

    /// libavcodec 5.1's libx264 and libx265 wrappers hand the picture to the library inside
    /// `avcodec_send_frame`, and both libraries copy it there: the buffer is back in the pool when
    /// `encode` returns, whatever the threads. So one buffer in flight, which sizes a file source's pool.
    func testEveryBufferIsBackInThePoolWhenEncodeReturns() throws {
        for codec in [VideoCodec.h264, .hevc] {
            let size = FrameSize(width: 320, height: 240)
            var settings = EncoderSettings(codec: codec, size: size, framesPerSecond: 30, keyframeInterval: 5, preset: "ultrafast")
            settings.planarInput = codec == .hevc
            let encoder = try SoftwareEncoder(settings: settings)
            XCTAssertEqual(encoder.maximumBuffersInFlight, 1)
            let pool = PixelBufferPool(format: encoder.inputFormat, width: size.width, height: size.height, capacity: 3)
            let source = TestPatternSource(size: size, fps: 30, realTime: false)
            try source.start(pool: pool)
            var packets = 0
            encoder.onBufferDone = { $0.recycle() }
            encoder.onPacket = { _ in packets += 1 }
            try encoder.start()
            for i in 0..<12 {
                let frame = try XCTUnwrap(source.nextFrame())
                try encoder.encode(frame, forceKeyframe: i % 5 == 0)
                XCTAssertEqual(pool.freeCount, pool.capacity, "\(codec): frame \(i) is back when encode returns")
            }
            try encoder.flush()
            XCTAssertEqual(packets, 12, "\(codec)")
        }
    }

    func testImpossibleSettingsAreReportedAsUnavailable() throws {
        try XCTSkipUnless(SoftwareEncoder.isAvailable, "libavcodec has no libx264")
        let settings = EncoderSettings(size: FrameSize(width: 320, height: 240), framesPerSecond: 30, keyframeInterval: 30,
                                       preset: "no-such-preset")
        let encoder = try SoftwareEncoder(settings: settings)
        XCTAssertThrowsError(try encoder.start()) { error in
            XCTAssertEqual((error as? EncoderError)?.kind, .unavailable)
        }
    }

    /// libx264 through libavcodec (the packet drain every libavcodec encoder shares).
    func testEachPacketCarriesItsFramesOwnPresentationTime() throws {
        let settings = EncoderSettings(size: FrameSize(width: 320, height: 240), framesPerSecond: 30, keyframeInterval: 30,
                                       profile: .high, preset: "ultrafast")
        try assertPacketsCarryTheirFramesTimes(try SoftwareEncoder(settings: settings), settings: settings)
    }

}
