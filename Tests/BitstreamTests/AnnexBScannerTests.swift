import XCTest
@testable import Bitstream

final class AnnexBScannerTests: XCTestCase {
    func testFourByteStartCodes() {
        let stream = hex("00000001 6742 00000001 68ce 00000001 6588")
        let result = scanAllWays(stream)
        XCTAssertEqual(shape(result.units), "7(4) 8(4) 5(4)")
        XCTAssertEqual(result.units.map(\.bytes), [hex("6742"), hex("68ce"), hex("6588")])
        XCTAssertEqual(result.units.map(\.offset), [0, 6, 12])
        XCTAssertEqual(result.skippedLeadingBytes, 0)
    }

    func testThreeByteStartCodes() {
        let stream = hex("000001 6742 000001 68ce 000001 6588")
        let result = scanAllWays(stream)
        XCTAssertEqual(shape(result.units), "7(3) 8(3) 5(3)")
        XCTAssertEqual(result.units.map(\.offset), [0, 5, 10])
    }

    func testLibx264MixedStartCodes() {
        // The pattern libx264 writes: 4-byte codes for SPS, PPS and the first NAL of a frame only.
        let stream = hex("00000001 6742c028 00000001 68ce0fc8 000001 0605ffff 000001 65888401 000001 6500 1fe2"
                         + "00000001 419a20 000001 41001fe2")
        let result = scanAllWays(stream)
        XCTAssertEqual(shape(result.units), "7(4) 8(4) 6(3) 5(3) 5(3) 1(4) 1(3)")
        XCTAssertEqual(result.units[4].bytes, hex("65001fe2"))
        XCTAssertEqual(result.units[5].bytes, hex("419a20"))
    }

    func testTrailingZeroBytesBelongToPreviousUnit() {
        // 09 10 00 00 | 00 00 00 01: two trailing_zero_8bits, then a 4-byte start code.
        let stream = hex("00000001 0910 0000 00000001 6742 00 00")
        let result = scanAllWays(stream)
        XCTAssertEqual(result.units.map(\.bytes), [hex("0910"), hex("6742")])
        XCTAssertEqual(result.units.map(\.startCodeLength), [4, 4])
        XCTAssertEqual(result.units[1].offset, 8)
    }

    func testZeroBeforeThreeByteCodeMakesItFourBytes() {
        let stream = hex("000001 0910 00 000001 6742")
        let result = scanAllWays(stream)
        XCTAssertEqual(shape(result.units), "9(3) 7(4)")
        XCTAssertEqual(result.units[0].bytes, hex("0910"))
        XCTAssertEqual(result.units[1].offset, 5)
    }

    func testLeadingGarbageIsSkippedAndCounted() {
        let stream = hex("deadbeef 0000 00000001 6742 000001 68")
        let result = scanAllWays(stream)
        XCTAssertEqual(result.skippedLeadingBytes, 6)
        XCTAssertEqual(shape(result.units), "7(4) 8(3)")
        XCTAssertEqual(result.units[0].offset, 6)
    }

    func testTruncatedFinalUnitIsReturned() {
        let result = scanAllWays(hex("00000001 6742 00000001 6588aabb"))
        XCTAssertEqual(result.units.last?.bytes, hex("6588aabb"))
    }

    func testPartialStartCodeAtEndIsStripped() {
        XCTAssertEqual(scanAllWays(hex("00000001 6742 0000")).units.map(\.bytes), [hex("6742")])
        XCTAssertEqual(scanAllWays(hex("00000001 6742 00")).units.map(\.bytes), [hex("6742")])
        // A complete start code with nothing after it encloses no unit.
        let dangling = scanAllWays(hex("00000001 6742 00000001"))
        XCTAssertEqual(dangling.units.map(\.bytes), [hex("6742")])
        XCTAssertEqual(dangling.emptyUnitCount, 1)
    }

    func testEmptyInput() {
        let result = scanAllWays([])
        XCTAssertEqual(result.units, [])
        XCTAssertEqual(result.skippedLeadingBytes, 0)
    }

    func testAllZeros() {
        let result = scanAllWays([UInt8](repeating: 0, count: 37))
        XCTAssertEqual(result.units, [])
        XCTAssertEqual(result.skippedLeadingBytes, 37)
    }

    func testNoStartCode() {
        let result = scanAllWays(hex("6742c028da01e0089f"))
        XCTAssertEqual(result.units, [])
        XCTAssertEqual(result.skippedLeadingBytes, 9)
    }

    func testBackToBackStartCodesGiveNoEmptyUnits() {
        let result = scanAllWays(hex("000001 000001 00000001 6742"))
        XCTAssertEqual(result.units.map(\.bytes), [hex("6742")])
        XCTAssertEqual(result.emptyUnitCount, 2)
    }

    func testZeroByteInsideUnitIsKept() {
        // 00 00 02 cannot be a start code; a single 00 inside a unit is payload.
        let result = scanAllWays(hex("00000001 6500 00 02 0001ff"))
        XCTAssertEqual(result.units.map(\.bytes), [hex("6500000200 01ff")])
    }

    func testScannerCanBeReusedAfterFinish() {
        var scanner = AnnexBScanner()
        _ = scanner.append(hex("00000001 6742"))
        XCTAssertEqual(scanner.finish().count, 1)
        let units = scanner.append(hex("000001 68ce 000001 65")) + scanner.finish()
        XCTAssertEqual(shape(units), "8(3) 5(3)")
        XCTAssertEqual(units[0].offset, 0)
    }

    func testRandomStreamsAgreeAcrossChunkings() {
        // Random units that may end in zeros, random start codes, random trailing zeros.
        var generator = SeededGenerator(seed: 99)
        for _ in 0..<20 {
            var stream: [UInt8] = []
            var expected: [[UInt8]] = []
            for _ in 0..<Int.random(in: 1...12, using: &generator) {
                stream += Bool.random(using: &generator) ? [0, 0, 0, 1] : [0, 0, 1]
                var unit = [UInt8.random(in: 1...0x7F, using: &generator)]
                for _ in 0..<Int.random(in: 0...40, using: &generator) {
                    unit.append(Bool.random(using: &generator) ? 0 : UInt8.random(in: 0...255, using: &generator))
                }
                let escaped = RBSP.addingEmulationPrevention(unit)
                stream += escaped
                var stripped = escaped
                while stripped.last == 0 { stripped.removeLast() }
                expected.append(stripped)
                stream += [UInt8](repeating: 0, count: Int.random(in: 0...2, using: &generator))
            }
            let result = scanAllWays(stream)
            XCTAssertEqual(result.units.map(\.bytes), expected)
        }
    }

    /// Linear, not quadratic: the scanner's copying is counted (not timed). Each byte may be copied
    /// twice (into the pending unit, then into the returned unit), whatever the chunking; doubling the
    /// input doubles the work. A re-scan or re-copy of the pending unit per chunk would grow with the
    /// square of the unit's size: 4 MB in 1 KB chunks would copy gigabytes.
    func testLinearTimeOnLargeInputFedInSmallChunks() {
        func scan(unitBytes: Int, chunk: Int) -> (units: [Int], copied: Int, input: Int) {
            var stream: [UInt8] = [0, 0, 0, 1, 0x65]
            stream += [UInt8](repeating: 0xAB, count: unitBytes)
            stream += [0, 0, 0, 1, 0x41, 0x9A]
            var scanner = AnnexBScanner()
            var units: [NALUnit] = []
            var index = 0
            while index < stream.count {
                let end = min(stream.count, index + chunk)
                units += scanner.append(stream[index..<end])
                index = end
            }
            units += scanner.finish()
            return (units.map(\.bytes.count), scanner.bytesCopied, stream.count)
        }
        let small = scan(unitBytes: 2 << 20, chunk: 1024), large = scan(unitBytes: 4 << 20, chunk: 1024)
        XCTAssertEqual(large.units, [(4 << 20) + 1, 2])
        XCTAssertLessThanOrEqual(large.copied, 2 * large.input, "at most two copies of each byte")
        XCTAssertLessThanOrEqual(small.copied, 2 * small.input, "at most two copies of each byte")
        // 2x the input, 2x the copying (±1%: the start codes and the short unit do not double).
        let ratio = Double(large.copied) / Double(small.copied)
        XCTAssertEqual(ratio, 2.0, accuracy: 0.02, "copies \(small.copied) -> \(large.copied)")
        // Byte-sized chunks cost no more per byte than kilobyte ones.
        let bytewise = scan(unitBytes: 64 << 10, chunk: 1)
        XCTAssertLessThanOrEqual(bytewise.copied, 2 * bytewise.input)
    }
}
