import XCTest
@testable import Bitstream

/// Synthetic NAL units that parse: real enough for the writer and the inspector.
enum Units {
    /// 320x240, 30 fps SPS with the given id.
    static func sps(id: UInt32 = 0) -> [UInt8] {
        SPSBuilder(profileIdc: 66, constraintFlags: 0x40, levelIdc: 13, spsID: id, widthInMbs: 20,
                   heightInMapUnits: 15, timing: (1, 60)).nalBytes()
    }

    static func pps(id: UInt32 = 0, spsID: UInt32 = 0, initQPOffset: Int32 = 0) -> [UInt8] {
        var writer = BitWriter()
        writer.writeUE(id)
        writer.writeUE(spsID)
        writer.writeFlag(false)  // CAVLC
        writer.writeFlag(false)
        writer.writeUE(0)  // one slice group
        writer.writeUE(0)
        writer.writeUE(0)
        writer.writeFlag(false)
        writer.writeBits(0, count: 2)
        writer.writeSE(initQPOffset)  // pic_init_qp_minus26
        writer.writeSE(0)
        writer.writeSE(0)
        writer.writeFlag(true)
        writer.writeFlag(false)
        writer.writeFlag(false)
        writer.writeTrailingBits()
        return [0x68] + RBSP.addingEmulationPrevention(writer.bytes)
    }

    /// A slice whose header parses, followed by `payload` bytes of filler (escaped, may hold zeros).
    static func slice(idr: Bool, firstMb: UInt32 = 0, ppsID: UInt32 = 0, payload: [UInt8] = [0xAB, 0xCD]) -> [UInt8] {
        var writer = BitWriter()
        writer.writeUE(firstMb)
        writer.writeUE(idr ? 7 : 5)
        writer.writeUE(ppsID)
        writer.writeBits(0, count: 4)  // frame_num
        for byte in payload { writer.writeBits(byte, count: 8) }
        writer.writeTrailingBits()
        return [idr ? 0x65 : 0x41] + RBSP.addingEmulationPrevention(writer.bytes)
    }

    static let aud: [UInt8] = [0x09, 0xF0]
    static let sei: [UInt8] = [0x06, 0x05, 0x01, 0x42, 0x80]
    /// libx264's version banner: user data unregistered (type 5) under x264's UUID, with a
    /// payload over 255 bytes so its size takes two bytes (0xFF, n), as x264's does.
    static let x264VersionSEI: [UInt8] = {
        let uuid: [UInt8] = [0xDC, 0x45, 0xE9, 0xBD, 0xE6, 0xD9, 0x48, 0xB7, 0x96, 0x2C, 0xD8, 0x20, 0xD9, 0x23, 0xEE, 0xEF]
        let text = Array("x264 - core 164 - H.264/MPEG-4 AVC codec - Copyleft 2003-2022 - options: ".utf8)
            + [UInt8](repeating: 0x61, count: 230) + [0]
        let size = uuid.count + text.count
        return [0x06, 0x05, 0xFF, UInt8(size - 255)] + uuid + text + [0x80]
    }()
}

/// Joins units into an Annex B buffer with the given start-code lengths (4 by default).
func annexB(_ units: [[UInt8]], startCodes: [Int]? = nil) -> [UInt8] {
    var output: [UInt8] = []
    for (index, unit) in units.enumerated() {
        output += (startCodes?[index] ?? 4) == 4 ? [0, 0, 0, 1] : [0, 0, 1]
        output += unit
    }
    return output
}

/// Inspects `bytes` whole, byte by byte and in random chunks, asserting all agree.
func inspectAllWays(_ bytes: [UInt8], maxSlicesPerPicture: Int = 1,
                    file: StaticString = #filePath, line: UInt = #line) -> StreamReport {
    var whole = StreamInspector(maxSlicesPerPicture: maxSlicesPerPicture)
    whole.append(bytes)
    let reference = whole.finish()
    for (label, chunks) in chunkings(of: bytes) {
        var inspector = StreamInspector(maxSlicesPerPicture: maxSlicesPerPicture)
        for chunk in chunks { inspector.append(chunk) }
        XCTAssertEqual(inspector.finish(), reference, "chunking \(label) differs", file: file, line: line)
    }
    return reference
}
