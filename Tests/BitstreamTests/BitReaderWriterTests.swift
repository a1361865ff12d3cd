import XCTest
@testable import Bitstream

final class BitReaderWriterTests: XCTestCase {
    /// ue(v) codewords from H.264 Table 9-2, as bit strings.
    private let ueCodes: [String] = [
        "1", "010", "011", "00100", "00101", "00110", "00111", "0001000", "0001001", "0001010",
        "0001011", "0001100", "0001101", "0001110", "0001111", "000010000", "000010001",
        "000010010", "000010011", "000010100", "000010101",
    ]

    private func bytes(fromBits bits: String) -> [UInt8] {
        var writer = BitWriter()
        for character in bits { writer.writeBit(character == "1") }
        return writer.bytes
    }

    func testReadUEKnownValues() throws {
        for (value, code) in ueCodes.enumerated() {
            var reader = BitReader(bytes(fromBits: code + "1"))
            XCTAssertEqual(try reader.readUE(), UInt32(value), "code \(code)")
            XCTAssertEqual(reader.bitPosition, code.count)
        }
    }

    func testWriteUEKnownValues() {
        for (value, code) in ueCodes.enumerated() {
            var writer = BitWriter()
            writer.writeUE(UInt32(value))
            XCTAssertEqual(writer.bitCount, code.count)
            XCTAssertEqual(writer.bytes, bytes(fromBits: code))
        }
    }

    func testSignedExpGolomb() throws {
        // Table 9-3: codeNum 0,1,2,3,4,5,6 -> 0,1,-1,2,-2,3,-3.
        let expected: [Int32] = [0, 1, -1, 2, -2, 3, -3]
        for (codeNum, value) in expected.enumerated() {
            var reader = BitReader(bytes(fromBits: ueCodes[codeNum]))
            XCTAssertEqual(try reader.readSE(), value)
            var writer = BitWriter()
            writer.writeSE(value)
            XCTAssertEqual(writer.bytes, bytes(fromBits: ueCodes[codeNum]))
        }
    }

    func testRoundTripOfMixedFields() throws {
        var writer = BitWriter()
        writer.writeBits(0x5, count: 3)
        writer.writeUE(0)
        writer.writeUE(4_000_000_000)
        writer.writeSE(-123_456)
        writer.writeSE(Int32.max)
        writer.writeBits(UInt64.max, count: 64)
        writer.writeFlag(true)
        writer.writeTrailingBits()
        XCTAssertTrue(writer.isByteAligned)

        var reader = BitReader(writer.bytes)
        XCTAssertEqual(try reader.readBits(3), 5)
        XCTAssertEqual(try reader.readUE(), 0)
        XCTAssertEqual(try reader.readUE(), 4_000_000_000)
        XCTAssertEqual(try reader.readSE(), -123_456)
        XCTAssertEqual(try reader.readSE(), Int32.max)
        XCTAssertEqual(try reader.readBits(64), UInt64.max)
        XCTAssertTrue(try reader.readFlag())
        XCTAssertFalse(reader.moreRBSPData())
        XCTAssertEqual(try reader.readBit(), 1)  // the stop bit
    }

    func testTruncatedDataThrows() {
        var reader = BitReader([0xFF])
        XCTAssertThrowsError(try reader.readBits(9)) { XCTAssertEqual($0 as? BitstreamError, .truncated) }
        XCTAssertEqual(reader.bitPosition, 0, "a failed read consumes nothing")
        XCTAssertThrowsError(try reader.skipBits(9))
        var empty = BitReader([])
        XCTAssertThrowsError(try empty.readBit())
        XCTAssertThrowsError(try empty.readUE())
        XCTAssertFalse(empty.moreRBSPData())
        // A ue(v) prefix that runs off the end.
        var prefixOnly = BitReader([0x00, 0x01])
        XCTAssertThrowsError(try prefixOnly.readUE()) { XCTAssertEqual($0 as? BitstreamError, .truncated) }
        // 32 leading zeros: more than a 32-bit value.
        var tooLong = BitReader([0, 0, 0, 0, 0xFF])
        XCTAssertThrowsError(try tooLong.readUE()) { XCTAssertEqual($0 as? BitstreamError, .invalidExpGolomb) }
    }

    func testRandomGarbageNeverTraps() {
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<2000 {
            let data = (0..<Int.random(in: 0...12, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var reader = BitReader(data)
            while (try? reader.readUE()) != nil {}
            _ = try? SequenceParameterSet(rbsp: data)
            _ = try? PictureParameterSet(rbsp: data)
            _ = try? SliceHeader(rbsp: data)
        }
    }

    func testMoreRBSPData() throws {
        // Payload bit 1, then stop bit and alignment: 1 1 000000.
        var reader = BitReader([0b1100_0000])
        XCTAssertTrue(reader.moreRBSPData())
        _ = try reader.readBit()
        XCTAssertFalse(reader.moreRBSPData())
        // Trailing cabac_zero_words after the stop bit do not count as data.
        var padded = BitReader([0b1000_0000, 0, 0])
        XCTAssertFalse(padded.moreRBSPData())
        _ = try padded.readBits(0)
    }
}
