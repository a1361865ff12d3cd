import Hub
import Bitstream
import CFFmpeg
import Outputs

/// The one video stream (H.264 or H.265) of a libavformat output (a file's container, a media
/// server's session): described from the first access unit, and fed one access unit per packet
/// with its capture time. Shared by `LibavContainerWriter` and `MediaServerTransport`.
struct VideoTrack {
    let stream: UnsafeMutablePointer<AVStream>
    /// The first access unit's presentation time: time zero of every track of the output.
    private(set) var firstPresentation: UInt64?
    private var lastTimestamp: Int64 = .min
    /// Times that did not move forward and were moved just past the previous one.
    private(set) var clampedTimestamps = 0

    /// Adds the stream to `context`, described by the parameter sets of `firstAccessUnit` (an IDR):
    /// its size, and the Annex-B parameter sets (SPS PPS, or VPS SPS PPS) as extradata; muxers that
    /// want avcC or hvcC convert it themselves, and those that want length-prefixed samples convert
    /// every packet. `what` names the output in errors.
    init(in context: UnsafeMutablePointer<AVFormatContext>, codec: VideoCodec, firstAccessUnit: [UInt8], what: String) throws {
        let units = AnnexBScanner.units(in: firstAccessUnit)
        var parameterSets: [NALUnit] = []
        for kind in codec.parameterSetOrder {
            guard let unit = units.first(where: { codec.role(ofType: codec.typeValue(of: $0.bytes)) == .parameterSet(kind) }) else {
                throw OutputError(.unwritable, "\(what): the first frame carries no \(codec.parameterSetNames)")
            }
            parameterSets.append(unit)
        }
        guard let stream = avformat_new_stream(context, nil) else {
            throw OutputError(.unwritable, "out of memory setting up \(what)")
        }
        let size = Self.pictureSize(codec: codec, sps: parameterSets[codec.parameterSetOrder.firstIndex(of: .sps)!])
        let parameters = stream.pointee.codecpar!
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        parameters.pointee.codec_id = codec == .h264 ? AV_CODEC_ID_H264 : AV_CODEC_ID_HEVC
        parameters.pointee.width = Int32(clamping: size.width)
        parameters.pointee.height = Int32(clamping: size.height)
        let extradata: [UInt8] = parameterSets.flatMap { [0, 0, 0, 1] + $0.bytes }
        guard let copy = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
            throw OutputError(.unwritable, "out of memory setting up \(what)")
        }
        extradata.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        parameters.pointee.extradata = copy.assumingMemoryBound(to: UInt8.self)
        parameters.pointee.extradata_size = Int32(extradata.count)
        stream.pointee.time_base = AVRational(num: 1, den: 90_000)
        self.stream = stream
    }

    /// The displayed size an SPS gives; zero when it cannot be read (the muxer then leaves it open).
    private static func pictureSize(codec: VideoCodec, sps: NALUnit) -> (width: Int, height: Int) {
        switch codec {
        case .h264:
            guard let parsed = try? SequenceParameterSet(nalUnit: sps) else { return (0, 0) }
            return (parsed.width, parsed.height)
        case .hevc:
            guard let parsed = try? HEVCSequenceParameterSet(nalUnit: sps) else { return (0, 0) }
            return (parsed.displayedWidth, parsed.displayedHeight)
        }
    }

    /// Marks the stream's sample entry `hvc1` (MP4 and QuickTime): the tag Safari and Chromium play;
    /// libavformat's default `hev1` is not.
    func tagForMP4() {
        let parameters = stream.pointee.codecpar!
        if parameters.pointee.codec_id == AV_CODEC_ID_HEVC {
            parameters.pointee.codec_tag = UInt32(UInt8(ascii: "h")) | UInt32(UInt8(ascii: "v")) << 8
                | UInt32(UInt8(ascii: "c")) << 16 | UInt32(UInt8(ascii: "1")) << 24
        }
    }

    /// Writes one access unit as one packet: its time counted from the first one's, in the stream's
    /// time base, always later than the previous one (clamped and counted otherwise); key when it is
    /// an IDR. Returns av_write_frame's status. (The muxer may move the time base in its header.)
    /// `interleaved`: through libavformat's interleaver, beside a sound track.
    mutating func write(_ chunk: StreamChunk, frameIntervalNanoseconds: UInt64?, into context: UnsafeMutablePointer<AVFormatContext>,
                        using packet: UnsafeMutablePointer<AVPacket>, interleaved: Bool = false) -> Int32 {
        let nanoseconds = AVRational(num: 1, den: 1_000_000_000)
        let first = firstPresentation ?? chunk.presentationTimeNanoseconds
        firstPresentation = first
        let elapsed = chunk.presentationTimeNanoseconds >= first ? chunk.presentationTimeNanoseconds - first : 0
        var timestamp = av_rescale_q(Int64(clamping: elapsed), nanoseconds, stream.pointee.time_base)
        if timestamp <= lastTimestamp {
            timestamp = lastTimestamp + 1
            clampedTimestamps += 1
        }
        lastTimestamp = timestamp
        av_packet_unref(packet)
        packet.pointee.stream_index = stream.pointee.index
        packet.pointee.pts = timestamp
        packet.pointee.dts = timestamp
        if let frameIntervalNanoseconds {
            packet.pointee.duration = av_rescale_q(Int64(clamping: frameIntervalNanoseconds), nanoseconds, stream.pointee.time_base)
        }
        packet.pointee.flags = chunk.isIDR ? AV_PKT_FLAG_KEY : 0
        return ChunkPacket.write(chunk, as: packet, interleaved: interleaved, into: context)
    }
}
