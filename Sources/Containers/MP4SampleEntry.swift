import Bitstream
import Outputs

/// The video sample entry of an MP4 file (`avc1` + `avcC`, or `hvc1` + `hvcC`), made from the
/// parameter sets of the file's first access unit (an IDR), and the picture size they give.
///
/// The same parameter sets stay in-band before every IDR (the stream contract); the sample entry's are
/// copies of them, so `hvc1` (whose arrays must be complete) holds. Samples are 4-byte length-prefixed.
struct MP4SampleEntry {
    let codec: VideoCodec
    let width: Int
    let height: Int
    /// The parameter sets in the codec's order (SPS PPS, or VPS SPS PPS), without start codes.
    private let parameterSets: [[UInt8]]

    /// - Parameter what: the output, for the error when the first access unit has no parameter sets.
    init(codec: VideoCodec, firstAccessUnit: [UInt8], what: String) throws {
        let units = AnnexBScanner.units(in: firstAccessUnit)
        var sets: [[UInt8]] = []
        for kind in codec.parameterSetOrder {
            // The SPS's first bytes are copied into the decoder configuration: they must be there.
            let least = kind != .sps ? 2 : codec == .h264 ? 4 : 15
            guard let unit = units.first(where: { codec.role(ofType: codec.typeValue(of: $0.bytes)) == .parameterSet(kind) }),
                  unit.bytes.count >= least else {
                throw OutputError(.unwritable, "\(what): the first frame carries no \(codec.parameterSetNames)")
            }
            sets.append(unit.bytes)
        }
        let sps = NALUnit(bytes: sets[codec.parameterSetOrder.firstIndex(of: .sps)!])
        switch codec {
        case .h264:
            let parsed = try? SequenceParameterSet(nalUnit: sps)
            width = parsed?.width ?? 0
            height = parsed?.height ?? 0
        case .hevc:
            let parsed = try? HEVCSequenceParameterSet(nalUnit: sps)
            width = parsed?.displayedWidth ?? 0
            height = parsed?.displayedHeight ?? 0
        }
        self.codec = codec
        self.parameterSets = sets
    }

    /// The `stsd` box's one entry.
    func write(into boxes: inout MP4BoxBuffer) {
        boxes.box(codec == .h264 ? "avc1" : "hvc1") { entry in
            entry.zeros(6)                    // reserved
            entry.u16(1)                      // data_reference_index
            entry.zeros(16)                   // pre_defined, reserved
            entry.u16(UInt16(clamping: width))
            entry.u16(UInt16(clamping: height))
            entry.u32(0x0048_0000)            // 72 dpi, both ways
            entry.u32(0x0048_0000)
            entry.u32(0)                      // reserved
            entry.u16(1)                      // frame_count
            entry.zeros(32)                   // compressorname
            entry.u16(0x0018)                 // depth: colour, no alpha
            entry.u16(0xFFFF)                 // pre_defined = -1
            if codec == .h264 { writeAVCC(into: &entry) } else { writeHVCC(into: &entry) }
            entry.box("pasp") { pasp in       // square pixels
                pasp.u32(1)
                pasp.u32(1)
            }
        }
    }

    /// AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.3.3).
    private func writeAVCC(into boxes: inout MP4BoxBuffer) {
        let sps = parameterSets[0], pps = parameterSets[1]
        boxes.box("avcC") { avcC in
            avcC.u8(1)                        // configurationVersion
            avcC.u8(sps[1])                   // profile_idc
            avcC.u8(sps[2])                   // constraint flags
            avcC.u8(sps[3])                   // level_idc
            avcC.u8(0xFC | 3)                 // lengthSizeMinusOne: 4-byte lengths
            avcC.u8(0xE0 | 1)                 // one SPS
            avcC.u16(UInt16(sps.count))
            avcC.append(sps)
            avcC.u8(1)                        // one PPS
            avcC.u16(UInt16(pps.count))
            avcC.append(pps)
            // The High profiles carry their chroma format and bit depths too.
            if [100, 110, 122, 144].contains(sps[1]) {
                let parsed = try? SequenceParameterSet(nalUnit: NALUnit(bytes: sps))
                avcC.u8(0xFC | UInt8((parsed?.chromaFormatIdc ?? 1) & 3))
                avcC.u8(0xF8 | UInt8(((parsed?.bitDepthLuma ?? 8) - 8) & 7))
                avcC.u8(0xF8 | UInt8(((parsed?.bitDepthChroma ?? 8) - 8) & 7))
                avcC.u8(0)                    // numOfSequenceParameterSetExt
            }
        }
    }

    /// HEVCDecoderConfigurationRecord (ISO/IEC 14496-15 8.3.3): the profile, tier and level fields are
    /// the SPS's own bytes (after its emulation prevention is taken out).
    private func writeHVCC(into boxes: inout MP4BoxBuffer) {
        let sps = parameterSets[1]
        let rbsp = RBSP.removingEmulationPrevention(sps)
        let parsed = try? HEVCSequenceParameterSet(nalUnit: NALUnit(bytes: sps))
        boxes.box("hvcC") { hvcC in
            hvcC.u8(1)                        // configurationVersion
            // general_profile_space..general_level_idc: bytes 3 to 14 of the SPS (2 header bytes, then
            // vps id / max_sub_layers_minus1 / temporal_id_nesting).
            hvcC.append(rbsp.count >= 15 ? Array(rbsp[3..<15]) : [UInt8](repeating: 0, count: 12))
            hvcC.u16(0xF000)                  // min_spatial_segmentation_idc 0
            hvcC.u8(0xFC)                     // parallelismType unknown
            hvcC.u8(0xFC | UInt8((parsed?.chromaFormatIdc ?? 1) & 3))
            hvcC.u8(0xF8 | UInt8(((parsed?.bitDepthLuma ?? 8) - 8) & 7))
            hvcC.u8(0xF8 | UInt8(((parsed?.bitDepthChroma ?? 8) - 8) & 7))
            hvcC.u16(0)                       // avgFrameRate unknown
            let subLayers = ((rbsp[2] >> 1) & 7) + 1, nested = rbsp[2] & 1
            // constantFrameRate 0, numTemporalLayers, temporalIdNested, lengthSizeMinusOne 3
            hvcC.u8((subLayers << 3) | (nested << 2) | 3)
            hvcC.u8(UInt8(parameterSets.count))
            for set in parameterSets {
                hvcC.u8(0x80 | ((set[0] >> 1) & 0x3F))  // array_completeness 1, NAL unit type
                hvcC.u16(1)
                hvcC.u16(UInt16(set.count))
                hvcC.append(set)
            }
        }
    }
}
