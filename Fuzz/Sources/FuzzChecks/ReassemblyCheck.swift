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
        let returned = pieces.append(bytes[offset..<(offset + n)])
        b += returned
        offset += n
        // The open access unit (what a receiver bounds) is what came in and was not returned.
        let open = pieces.openAccessUnitByteCount
        precondition(open >= 0 && open <= offset - (b.last?.endOffset ?? 0), "open access unit larger than the bytes not yet returned")
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
    // A scanner that keeps only a prefix of each unit (camrec inspect) sees the same units and sizes.
    var keeping = AnnexBScanner(keepingAtMost: Int(bytes.first ?? 0) + 1)
    let kept = keeping.append(bytes) + keeping.finish()
    let full = AnnexBScanner.units(in: bytes)
    precondition(kept.count == full.count, "a keep limit changed the unit count")
    for (k, f) in zip(kept, full) {
        precondition(k.byteCount == f.bytes.count && k.offset == f.offset && f.bytes.starts(with: k.bytes)
                     && k.bytes.count == min(f.bytes.count, keeping.keepLimit), "a keep limit changed a unit")
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
