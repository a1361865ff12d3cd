import Bitstream
import NetStream
import XCTest

/// The per-access-unit bound a receiver applies once a stream has started.
final class AccessUnitLimitTests: XCTestCase {
    /// An SPS as an encoder writes it: High or Baseline profile, progressive, no VUI.
    static func sps(profile: UInt8, level: UInt8, widthInMbs: UInt32, heightInMbs: UInt32) throws -> SequenceParameterSet {
        var w = BitWriter()
        w.writeBits(UInt64(profile), count: 8)
        w.writeBits(0, count: 8)            // constraint flags
        w.writeBits(UInt64(level), count: 8)
        w.writeUE(0)                        // seq_parameter_set_id
        if profile == 100 {
            w.writeUE(1)                    // chroma_format_idc 4:2:0
            w.writeUE(0); w.writeUE(0)      // 8-bit
            w.writeFlag(false); w.writeFlag(false)
        }
        w.writeUE(0)                        // log2_max_frame_num_minus4
        w.writeUE(2)                        // pic_order_cnt_type
        w.writeUE(1)                        // max_num_ref_frames
        w.writeFlag(false)
        w.writeUE(widthInMbs - 1)
        w.writeUE(heightInMbs - 1)
        w.writeFlag(true)                   // frame_mbs_only
        w.writeFlag(true)                   // direct_8x8_inference
        w.writeFlag(false)                  // cropping
        w.writeFlag(false)                  // VUI
        w.writeTrailingBits()
        return try SequenceParameterSet(rbsp: w.bytes)
    }

    func testTheBoundFollowsTheLevelTables() throws {
        // Level 4.0 High 1920x1088: CPB 25000 × 1500 bits = 4 687 500 bytes beats
        // 8160 macroblocks × 401 bytes = 3 272 160; twice that plus 1 MiB.
        let hd = try Self.sps(profile: 100, level: 40, widthInMbs: 120, heightInMbs: 68)
        XCTAssertEqual(AccessUnitLimit.maximumBytes(for: hd), 2 * 4_687_500 + 1_048_576)
        // Level 1.0 Baseline 176x144: 99 macroblocks × 401 = 39 699 beats 175 × 1200 / 8 = 26 250.
        let qcif = try Self.sps(profile: 66, level: 10, widthInMbs: 11, heightInMbs: 9)
        XCTAssertEqual(AccessUnitLimit.maximumBytes(for: qcif), 2 * 99 * 401 + 1_048_576)
        // A picture larger than its level allows counts as MaxFS, not as what it claims.
        let huge = try Self.sps(profile: 66, level: 10, widthInMbs: 1000, heightInMbs: 1000)
        XCTAssertEqual(AccessUnitLimit.maximumBytes(for: huge), AccessUnitLimit.maximumBytes(for: qcif))
        // An unknown level is the largest one (6.2), still finite.
        let unknown = try Self.sps(profile: 100, level: 99, widthInMbs: 120, heightInMbs: 68)
        XCTAssertEqual(AccessUnitLimit.maximumBytes(for: unknown), 2 * 800_000 * 1500 / 8 + 1_048_576)
    }

    /// Filler units after an IDR never close the access unit: the open count grows with them,
    /// the same whichever way the bytes are cut, so a receiver can bound it.
    func testFillerAfterAnIDRIsCountedAsOneOpenAccessUnitWhateverTheChunking() {
        var stream: [UInt8] = []
        for unit: [UInt8] in [[0x67, 0x42, 0, 0x1E, 0x80], [0x68, 0xCE, 0x3C, 0x80], [0x65, 0x88, 0x84, 0x21, 0x80]] {
            stream += [0, 0, 0, 1] + unit
        }
        for _ in 0..<200 { stream += [0, 0, 0, 1, 0x0C] + [UInt8](repeating: 0xFF, count: 999) + [0x80] }
        for (name, size) in [("whole", Int.max), ("bytewise", 1), ("chunks of 777", 777)] {
            var assembler = AccessUnitAssembler()
            var completed: [ReceivedAccessUnit] = []
            var offset = 0
            while offset < stream.count {
                let n = min(size, stream.count - offset)
                completed += assembler.append(stream[offset..<(offset + n)])
                offset += n
            }
            XCTAssertTrue(completed.isEmpty, name)
            XCTAssertEqual(assembler.openAccessUnitByteCount, stream.count, name)
            // Once it closes, nothing is held.
            completed += assembler.append([0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x41, 0x9A])
            XCTAssertEqual(completed.count, 1, name)
            XCTAssertEqual(assembler.openAccessUnitByteCount, 12, name)
        }
    }
}
