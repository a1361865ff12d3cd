@testable import Containers
import Hub
import Outputs
import XCTest

/// The live view's fragmenter: an init segment, then exactly one moof+mdat per access unit, handed
/// out with that access unit (not when the next one comes).
final class LiveMP4FragmenterTests: XCTestCase {
    let pool = StreamChunkPool()

    func chunk(idr: Bool, milliseconds: UInt64) -> StreamChunk {
        let c = pool.take()
        let start = LibavContainerWriterTests.startCode
        let bytes = idr
            ? start + LibavContainerWriterTests.sps + start + LibavContainerWriterTests.pps + start + [0x65, 0x88, 0x84, 0x00, 0x21]
            : start + [0x41, 0x9A, 0x02, 0x04, 0x80]
        c.fill { $0 = bytes }
        c.isIDR = idr
        c.presentationTimeNanoseconds = milliseconds * 1_000_000
        return c
    }

    /// The top-level box types of `bytes`, in order.
    func boxes(_ bytes: [UInt8]) -> [String] {
        var types: [String] = []
        var offset = 0
        while offset + 8 <= bytes.count {
            let size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            types.append(String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self))
            guard size >= 8 else { break }
            offset += size
        }
        XCTAssertEqual(offset, bytes.count, "boxes end exactly at the end of the piece")
        return types
    }

    func testNothingBeforeTheFirstIDRThenAnInitSegmentAndOneFragmentPerFrame() throws {
        let fragmenter = try LiveMP4Fragmenter(framesPerSecond: 30)
        XCTAssertNil(try fragmenter.fragment(of: chunk(idr: false, milliseconds: 0)))
        XCTAssertNil(fragmenter.initSegment)

        let first = try XCTUnwrap(try fragmenter.fragment(of: chunk(idr: true, milliseconds: 33)))
        XCTAssertEqual(boxes(try XCTUnwrap(fragmenter.initSegment)), ["ftyp", "moov"])
        XCTAssertEqual(boxes(first), ["moof", "mdat"])
        for n in 2...5 {
            let fragment = try XCTUnwrap(try fragmenter.fragment(of: chunk(idr: false, milliseconds: UInt64(n) * 33)))
            XCTAssertEqual(boxes(fragment), ["moof", "mdat"], "frame \(n)")
            // mdat holds this frame's one NAL unit with a 4-byte length in place of its start code.
            XCTAssertEqual(Array(fragment.suffix(9)), [0, 0, 0, 5, 0x41, 0x9A, 0x02, 0x04, 0x80])
        }
    }

    func testTheCodecStringIsProfileConstraintsAndLevelFromTheSPS() {
        let start = LibavContainerWriterTests.startCode
        let unit = start + LibavContainerWriterTests.sps + start + LibavContainerWriterTests.pps
        XCTAssertEqual(LiveMP4Fragmenter.codecString(idrAccessUnit: unit), "avc1.64001F")
        XCTAssertNil(LiveMP4Fragmenter.codecString(idrAccessUnit: start + LibavContainerWriterTests.pps))
    }
}
