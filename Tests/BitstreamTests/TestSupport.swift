import XCTest
@testable import Bitstream

/// SplitMix64: a tiny deterministic generator so randomized tests repeat exactly.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Seeds used by every chunked-feeding test.
let chunkSeeds: [UInt64] = [1, 2, 3, 42, 1234, 0xC0FFEE]

/// Bytes from a hex string such as "67 42 c0 1e"; whitespace is ignored.
func hex(_ string: String) -> [UInt8] {
    let digits = string.filter { !$0.isWhitespace }
    precondition(digits.count % 2 == 0, "odd hex string")
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        bytes.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

/// The ways a test feeds a stream: whole, byte by byte, and random chunks (including
/// empty ones) for several seeds.
func chunkings(of bytes: [UInt8]) -> [(label: String, chunks: [ArraySlice<UInt8>])] {
    var result: [(String, [ArraySlice<UInt8>])] = []
    result.append(("whole", [bytes[...]]))
    result.append(("bytewise", bytes.indices.map { bytes[$0...$0] }))
    for seed in chunkSeeds {
        var generator = SeededGenerator(seed: seed)
        var chunks: [ArraySlice<UInt8>] = []
        var index = 0
        while index < bytes.count {
            let size = Int.random(in: 0...7, using: &generator) == 0 ? 0 : Int.random(in: 1...9, using: &generator)
            let end = min(bytes.count, index + size)
            chunks.append(bytes[index..<end])
            index = end
        }
        chunks.append([])
        result.append(("seed \(seed)", chunks))
    }
    return result
}

struct ScanResult: Equatable {
    var units: [NALUnit]
    var skippedLeadingBytes: Int
    var emptyUnitCount: Int
}

func scan(_ chunks: [ArraySlice<UInt8>]) -> ScanResult {
    var scanner = AnnexBScanner()
    var units: [NALUnit] = []
    for chunk in chunks {
        units += scanner.append(chunk)
    }
    units += scanner.finish()
    return ScanResult(units: units, skippedLeadingBytes: scanner.skippedLeadingBytes, emptyUnitCount: scanner.emptyUnitCount)
}

/// Scans `bytes` every way and asserts all ways agree; returns the common result.
func scanAllWays(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> ScanResult {
    let reference = scan([bytes[...]])
    for (label, chunks) in chunkings(of: bytes) {
        XCTAssertEqual(scan(chunks), reference, "chunking \(label) differs", file: file, line: line)
    }
    // The zero-copy walk must find the same units.
    var ranges: [(Range<Int>, Int)] = []
    bytes.withUnsafeBytes { buffer in
        AnnexBScanner.forEachUnit(in: buffer) { ranges.append(($0, $1)) }
    }
    XCTAssertEqual(ranges.map { Array(bytes[$0.0]) }, reference.units.map(\.bytes), "forEachUnit bytes", file: file, line: line)
    XCTAssertEqual(ranges.map(\.1), reference.units.map(\.startCodeLength), "forEachUnit start codes", file: file, line: line)
    XCTAssertEqual(ranges.map { $0.0.lowerBound - $0.1 }, reference.units.map(\.offset), "forEachUnit offsets", file: file, line: line)
    return reference
}

/// Summary "type(startCodeLength)" list, as in the field notes: "7(4) 8(4) 6(3) 5(3)".
func shape(_ units: [NALUnit]) -> String {
    units.map { "\($0.type.rawValue)(\($0.startCodeLength))" }.joined(separator: " ")
}
