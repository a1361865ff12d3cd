import Bitstream
import NetStream

/// One fuzz input as NAL units: every unit goes through the SPS, PPS and slice-header
/// parsers (whatever its type, so each parser meets every kind of garbage); none may trap,
/// and an SPS that parses gives a finite access-unit bound a receiver can hold.
public func checkParsers(_ bytes: [UInt8]) {
    var units = AnnexBScanner.units(in: bytes)
    // The input as one unit too, so short inputs reach the parsers without start codes.
    units.append(NALUnit(bytes: bytes))
    for unit in units {
        if let sps = try? SequenceParameterSet(nalUnit: unit) {
            let limit = AccessUnitLimit.maximumBytes(for: sps)
            precondition(limit >= AccessUnitLimit.slackBytes && limit < 1 << 31, "access unit bound out of range: \(limit)")
            _ = sps.width
            _ = sps.height
            _ = sps.frameRate
        }
        _ = try? PictureParameterSet(nalUnit: unit)
        _ = try? SliceHeader(nalUnit: unit)
    }
}

/// One fuzz input through camrec's stream writer, as one access unit and as the access
/// units the assembler finds: no trap, and whatever it writes keeps the contract's first
/// promise (a 4-byte start code before every unit).
public func checkWriter(_ bytes: [UInt8]) {
    var writer = AnnexBStreamWriter()
    var output: [UInt8] = []
    var assembler = AccessUnitAssembler()
    let accessUnits = assembler.append(bytes) + assembler.finish()
    for accessUnit in [bytes] + accessUnits.map({ $0.annexB() }) {
        output.removeAll(keepingCapacity: true)
        guard (try? writer.write(accessUnit: accessUnit, into: &output)) != nil else { continue }
        for unit in AnnexBScanner.units(in: output) {
            precondition(unit.startCodeLength == 4, "the writer wrote a 3-byte start code")
        }
    }
}
