import Bitstream
import NetStream
import XCTest

/// A small deterministic generator, so failures reproduce.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A synthetic stream shaped like camrec's network stream: IDR access units with SPS+PPS, P access
/// units with several slices, timing notes, 3- and 4-byte start codes, payloads full of zeros.
func syntheticStream(frames: Int, seed: UInt64, notes: Bool = true, mixedStartCodes: Bool = true) -> (bytes: [UInt8], units: [[UInt8]], accessUnits: Int) {
    var rng = SplitMix64(state: seed)
    var bytes: [UInt8] = []
    var units: [[UInt8]] = []
    func payload(_ n: Int) -> [UInt8] {
        // Zeros are common in real slices; emulation prevention makes them safe. A unit ends in
        // its rbsp_stop_one_bit, never in a zero byte.
        RBSP.addingEmulationPrevention((0..<n).map { _ in rng.next() % 3 == 0 ? 0 : UInt8.random(in: 1...255, using: &rng) } + [0x80])
    }
    func put(_ unit: [UInt8], note: Bool = false) {
        let four = !mixedStartCodes || rng.next() % 2 == 0
        bytes += four ? [0, 0, 0, 1] : [0, 0, 1]
        bytes += unit
        if !note { units.append(unit) }
    }
    for frame in 0..<frames {
        let idr = frame % 10 == 0
        var au: [[UInt8]] = []
        if idr {
            au.append([0x67] + payload(12))
            au.append([0x68, 0xCE, 0x3C, 0x80])
        }
        let slices = 1 + Int(rng.next() % 3)
        for s in 0..<slices {
            // first_mb_in_slice: 0 ("1" bit) for the first slice, non-zero ("010" = 1) after.
            let header: UInt8 = s == 0 ? 0x88 : 0x44
            au.append([idr ? 0x65 : 0x41, header] + payload(Int(rng.next() % 400) + 1))
        }
        let body = au.reduce(0) { $0 + 4 + $1.count }
        var noteBytes: [UInt8]?
        if notes {
            let sei = TimestampSEI(captureTimeNanoseconds: UInt64(frame) << 32, sendTimeNanoseconds: 0x0000_0300_0000_0001,
                                   sequence: UInt64(frame), accessUnitByteCount: UInt64(body))
            noteBytes = Array(sei.annexB.dropFirst(4))
        }
        let split = idr ? 2 : 0
        for (i, unit) in au.enumerated() {
            if i == split, let noteBytes { put(noteBytes, note: true) }
            put(unit)
        }
        // Sometimes trailing zeros between access units, as Annex B allows.
        if rng.next() % 5 == 0 { bytes += [0, 0] }
    }
    return (bytes, units, frames)
}

func reassemble(_ bytes: [UInt8], chunkSizes: (inout SplitMix64) -> Int, seed: UInt64 = 1) -> [ReceivedAccessUnit] {
    var rng = SplitMix64(state: seed)
    var assembler = AccessUnitAssembler()
    var result: [ReceivedAccessUnit] = []
    var offset = 0
    while offset < bytes.count {
        let n = min(bytes.count - offset, max(1, chunkSizes(&rng)))
        result += assembler.append(bytes[offset..<(offset + n)])
        offset += n
    }
    result += assembler.finish()
    return result
}

final class ReassemblyTests: XCTestCase {
    func testOneByteAtATimeAllAtOnceAndRandomChunksGiveTheSameUnits() {
        for seed: UInt64 in [1, 2, 3, 42] {
            let stream = syntheticStream(frames: 35, seed: seed)
            let whole = reassemble(stream.bytes) { _ in Int.max }
            let bytewise = reassemble(stream.bytes) { _ in 1 }
            let random = reassemble(stream.bytes, chunkSizes: { Int($0.next() % 3000) + 1 }, seed: seed)
            let tiny = reassemble(stream.bytes, chunkSizes: { Int($0.next() % 7) + 1 }, seed: seed)
            XCTAssertEqual(whole.count, 35, "seed \(seed)")
            for other in [bytewise, random, tiny] {
                XCTAssertEqual(other.count, whole.count)
                XCTAssertEqual(AccessUnitAssembler.nalUnits(of: other).map(\.bytes), AccessUnitAssembler.nalUnits(of: whole).map(\.bytes))
                XCTAssertEqual(other.map(\.endOffset), whole.map(\.endOffset))
                XCTAssertEqual(other.map(\.timestamp), whole.map(\.timestamp))
            }
            // The NAL units are the ones that went in, timing notes stripped.
            XCTAssertEqual(AccessUnitAssembler.nalUnits(of: whole).map(\.bytes), stream.units)
            // And the scanner alone agrees (timing notes aside).
            let scanned = AnnexBScanner.units(in: stream.bytes).filter { TimestampSEI(nalUnit: $0.bytes) == nil }
            XCTAssertEqual(scanned.map(\.bytes), stream.units)
        }
    }

    func testAccessUnitsCarryTheirNotesAndFlags() {
        let stream = syntheticStream(frames: 12, seed: 7, mixedStartCodes: false)
        let units = reassemble(stream.bytes) { _ in 100 }
        XCTAssertEqual(units.map(\.isIDR), (0..<12).map { $0 % 10 == 0 })
        XCTAssertEqual(units.map { $0.timestamp?.sequence }, (0..<12).map { UInt64($0) })
        XCTAssertTrue(units.allSatisfy { !$0.isTruncated })
        XCTAssertTrue(units[0].hasSPS && units[0].hasPPS)
        XCTAssertEqual(units[0].units.map(\.type), [.sps, .pps] + Array(repeating: .idrSlice, count: units[0].units.count - 2))
        // With 4-byte start codes everywhere, the bytes of an access unit are what the note says.
        for unit in units { XCTAssertEqual(UInt64(unit.byteCount), unit.timestamp?.accessUnitByteCount) }
    }

    func testAStreamCutShortMarksItsLastAccessUnitTruncated() {
        let stream = syntheticStream(frames: 5, seed: 9, mixedStartCodes: false)
        let cut = Array(stream.bytes.dropLast(10))
        let units = reassemble(cut) { _ in 64 }
        XCTAssertEqual(units.count, 5)
        XCTAssertTrue(units.last!.isTruncated)
        XCTAssertTrue(units.dropLast().allSatisfy { !$0.isTruncated })
    }

    func testGarbageWithoutStartCodesStaysPendingAndCounted() {
        var assembler = AccessUnitAssembler()
        var rng = SplitMix64(state: 5)
        let garbage = (0..<100_000).map { _ in UInt8(truncatingIfNeeded: rng.next() | 0x01) }  // never a zero byte
        XCTAssertTrue(assembler.append(garbage).isEmpty)
        XCTAssertEqual(assembler.pendingByteCount, 100_000)
        XCTAssertEqual(assembler.nalUnitCount, 0)
        XCTAssertTrue(assembler.finish().isEmpty)
    }

    func testRandomBytesNeverTrap() {
        var rng = SplitMix64(state: 11)
        for _ in 0..<50 {
            let bytes = (0..<Int(rng.next() % 5000)).map { _ in UInt8(truncatingIfNeeded: rng.next() % 4 == 0 ? 0 : rng.next()) }
            let a = reassemble(bytes) { _ in Int.max }
            let b = reassemble(bytes) { _ in 1 }
            XCTAssertEqual(AccessUnitAssembler.nalUnits(of: a).map(\.bytes), AccessUnitAssembler.nalUnits(of: b).map(\.bytes))
        }
    }
}

final class TimestampSEITests: XCTestCase {
    func testRoundTripIncludingValuesThatNeedEmulationPrevention() {
        for values in [(0, 0, 0, 0), (1, 2, 3, 4), (0x0000_0001_0000_0003, 0x0000_0300_0000_0000, UInt64.max, 0x0000_0000_0000_0100)] as [(UInt64, UInt64, UInt64, UInt64)] {
            let note = TimestampSEI(captureTimeNanoseconds: values.0, sendTimeNanoseconds: values.1, sequence: values.2, accessUnitByteCount: values.3)
            let bytes = note.annexB
            XCTAssertEqual(Array(bytes.prefix(5)), [0, 0, 0, 1, 6])
            // No start code inside the unit.
            let units = AnnexBScanner.units(in: bytes)
            XCTAssertEqual(units.count, 1)
            XCTAssertEqual(TimestampSEI(nalUnit: units[0].bytes), note)
        }
    }

    func testOtherSEIIsNotANote() {
        XCTAssertNil(TimestampSEI(nalUnit: [0x06, 0x05, 0x01, 0x42, 0x80]))
        var other = TimestampSEI(captureTimeNanoseconds: 1, sendTimeNanoseconds: 2, sequence: 3, accessUnitByteCount: 4).annexB
        other[10] ^= 0xFF  // a different UUID
        XCTAssertNil(TimestampSEI(nalUnit: Array(other.dropFirst(4))))
        XCTAssertNil(TimestampSEI(nalUnit: [0x06]))
    }

    func testInsertionOffsetIsTheHeadOfTheAccessUnitAfterAnAUD() {
        // In an IDR access unit the note goes ahead of the SPS, so SPS, PPS and the IDR
        // slice stay together ([AUD] [SEI …] SPS PPS IDR).
        let idr: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 3, 0, 0, 0, 1, 0x68, 4, 0, 0, 0, 1, 0x65, 0x88, 9]
        idr.withUnsafeBytes { XCTAssertEqual(TimestampSEI.insertionOffset(in: $0), 0) }
        let p: [UInt8] = [0, 0, 0, 1, 0x41, 0x9A, 1]
        p.withUnsafeBytes { XCTAssertEqual(TimestampSEI.insertionOffset(in: $0), 0) }
        let aud: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x67, 1, 0, 0, 0, 1, 0x68, 4, 0, 0, 0, 1, 0x65, 0x88]
        aud.withUnsafeBytes { XCTAssertEqual(TimestampSEI.insertionOffset(in: $0), 6) }
        let short: [UInt8] = [0, 0, 0, 1, 0x09]
        short.withUnsafeBytes { XCTAssertEqual(TimestampSEI.insertionOffset(in: $0), 0) }
    }
}
