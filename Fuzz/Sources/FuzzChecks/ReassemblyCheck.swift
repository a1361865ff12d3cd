import Bitstream
import NetStream

/// One fuzz input: reassembled whole and in pieces (sizes taken from the input itself), the results
/// must agree exactly; every access unit and timing note must be readable without trapping.
public func checkReassembly(_ bytes: [UInt8]) {
    var whole = AccessUnitAssembler()
    var a = whole.append(bytes)
    a += whole.finish()

    let step = bytes.isEmpty ? 1 : Int(bytes[0] % 13) + 1
    var pieces = AccessUnitAssembler()
    var b: [ReceivedAccessUnit] = []
    var offset = 0
    var round = 0
    while offset < bytes.count {
        // Vary the piece size: 1 byte, `step` bytes, 3·step bytes, …
        let n = min(bytes.count - offset, round % 3 == 0 ? 1 : step * (round % 3))
        b += pieces.append(bytes[offset..<(offset + n)])
        offset += n
        round += 1
    }
    b += pieces.finish()

    precondition(a.count == b.count, "access unit count differs with chunking")
    for (x, y) in zip(a, b) {
        precondition(x.units.map(\.bytes) == y.units.map(\.bytes), "NAL units differ with chunking")
        precondition(x.endOffset == y.endOffset && x.timestamp == y.timestamp && x.isIDR == y.isIDR)
        precondition(x.endOffset <= bytes.count)
        _ = x.isTruncated
        let annexB = x.annexB()
        precondition(annexB.count == x.byteCount)
    }
    // Scanning the same bytes directly gives the same units, timing notes aside.
    let scanned = AnnexBScanner.units(in: bytes).filter { TimestampSEI(nalUnit: $0.bytes) == nil }
    precondition(scanned.map(\.bytes) == AccessUnitAssembler.nalUnits(of: a).map(\.bytes), "scanner and assembler disagree")

    bytes.withUnsafeBytes { raw in
        let split = TimestampSEI.insertionOffset(in: raw)
        precondition(split >= 0 && split <= bytes.count)
    }
    // A timing note built from input bytes round-trips.
    if bytes.count >= 32 {
        func word(_ i: Int) -> UInt64 { bytes[(i * 8)..<(i * 8 + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
        let note = TimestampSEI(captureTimeNanoseconds: word(0), sendTimeNanoseconds: word(1), sequence: word(2), accessUnitByteCount: word(3))
        let units = AnnexBScanner.units(in: note.annexB)
        precondition(units.count == 1 && TimestampSEI(nalUnit: units[0].bytes) == note, "timing note round trip")
    }
}
