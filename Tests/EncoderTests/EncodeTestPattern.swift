import Capture
import Encoder
import Frames
import XCTest

/// One packet an encoder gave, as the encoder tests compare them.
struct ComparedPacket: Equatable {
    let sequence: UInt64
    let key: Bool
    let bytes: [UInt8]
}

/// Encodes `frames` test-pattern frames with `encoder`, forcing IDRs at `idrs` and finishing pending
/// frames (a camera gone) after `finishAfter`; checks that every buffer is back in the pool when
/// `encode` returns (both direct encoders copy the picture there).
func encodeTestPattern(_ encoder: VideoEncoder, settings: EncoderSettings, frames: Int, idrs: Set<Int>,
                       finishAfter: Int? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> [ComparedPacket] {
    let pool = PixelBufferPool(format: encoder.inputFormat, width: settings.size.width, height: settings.size.height,
                               capacity: encoder.maximumBuffersInFlight + 2)
    let source = TestPatternSource(size: settings.size, fps: settings.framesPerSecond, realTime: false)
    try source.start(pool: pool)
    var packets: [ComparedPacket] = []
    encoder.onBufferDone = { $0.recycle() }
    encoder.onPacket = { packets.append(ComparedPacket(sequence: $0.sequence, key: $0.isKeyframe, bytes: Array($0.data))) }
    try encoder.start()
    for i in 0..<frames {
        try encoder.encode(try XCTUnwrap(source.nextFrame()), forceKeyframe: idrs.contains(i))
        XCTAssertEqual(pool.freeCount, pool.capacity, "\(encoder.name): frame \(i) back when encode returns", file: file, line: line)
        if i == finishAfter { try encoder.finishPending() }
    }
    try encoder.flush()
    return packets
}

/// The same frames through `reference` (a library through libavcodec) and `direct` (the library called
/// itself): the same frames, sequences and keyframes, and the same bytes packet for packet when
/// `sameBytes`. Returns both runs for further checks.
@discardableResult
func compareEncoders(reference: VideoEncoder, direct: VideoEncoder, settings: EncoderSettings, frames: Int, idrs: Set<Int>,
                     finishAfter: Int?, sameBytes: Bool, _ label: String,
                     file: StaticString = #filePath, line: UInt = #line) throws -> (reference: [ComparedPacket], direct: [ComparedPacket]) {
    let expected = try encodeTestPattern(reference, settings: settings, frames: frames, idrs: idrs, finishAfter: finishAfter, file: file, line: line)
    let got = try encodeTestPattern(direct, settings: settings, frames: frames, idrs: idrs, finishAfter: finishAfter, file: file, line: line)
    XCTAssertEqual(expected.count, frames, "\(label): \(reference.name) through libavcodec gave every frame", file: file, line: line)
    XCTAssertEqual(got.map(\.sequence), expected.map(\.sequence), "\(label): sequences", file: file, line: line)
    XCTAssertEqual(got.map(\.key), expected.map(\.key), "\(label): keyframes", file: file, line: line)
    if sameBytes {
        for (ours, theirs) in zip(got, expected) where ours.bytes != theirs.bytes {
            XCTFail("\(label): frame \(ours.sequence) differs (\(ours.bytes.count) bytes against \(theirs.bytes.count))", file: file, line: line)
            break
        }
    }
    return (expected, got)
}

/// A camera's frames come when they come (vivid's second frame 19.8 ms after its first, a webcam at
/// 29.5 fps when asked for 30): each packet must carry its own frame's presentation time, not its
/// number at the nominal rate, or sound stamped from the same clock drifts from the picture.
func assertPacketsCarryTheirFramesTimes(_ encoder: VideoEncoder, settings: EncoderSettings,
                                        file: StaticString = #filePath, line: UInt = #line) throws {
    let pool = PixelBufferPool(format: encoder.inputFormat, width: settings.size.width, height: settings.size.height,
                               capacity: encoder.maximumBuffersInFlight + 2)
    let source = TestPatternSource(size: settings.size, fps: settings.framesPerSecond, realTime: false)
    try source.start(pool: pool)
    // 19.8 ms, then 33.9 ms steps (29.5 fps), then a gap of 200 ms.
    let times: [UInt64] = (0..<20).map { i in
        i == 0 ? 0 : 19_800_000 + UInt64(i - 1) * 33_898_305 + (i >= 15 ? 200_000_000 : 0)
    }
    var got: [UInt64: UInt64] = [:]
    encoder.onBufferDone = { $0.recycle() }
    encoder.onPacket = { got[$0.sequence] = $0.presentationTimeNanoseconds }
    try encoder.start()
    for time in times {
        let buffer = try XCTUnwrap(source.nextFrame())
        buffer.presentationTimeNanoseconds = time
        try encoder.encode(buffer, forceKeyframe: false)
    }
    try encoder.flush()
    XCTAssertEqual(got.count, times.count, "\(encoder.name): every frame came out", file: file, line: line)
    for (sequence, time) in times.enumerated() {
        XCTAssertEqual(got[UInt64(sequence)], time, "\(encoder.name): frame \(sequence)'s own time", file: file, line: line)
    }
}
