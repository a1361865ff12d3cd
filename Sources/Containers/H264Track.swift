import Bitstream
import CFFmpeg
import Outputs

/// The one H.264 video stream of a libavformat output (a file's container, a media server's
/// session): described from the first access unit, and fed one access unit per packet with its
/// capture time. Shared by `LibavContainerWriter` and `MediaServerTransport`.
struct H264Track {
    let stream: UnsafeMutablePointer<AVStream>
    private var firstPresentation: UInt64?
    private var lastTimestamp: Int64 = .min
    /// Times that did not move forward and were moved just past the previous one.
    private(set) var clampedTimestamps = 0

    /// Adds the stream to `context`, described by the SPS and PPS of `firstAccessUnit` (an IDR):
    /// its size, and Annex-B SPS+PPS as extradata (muxers that want avcC convert it themselves).
    /// `what` names the output in errors.
    init(in context: UnsafeMutablePointer<AVFormatContext>, firstAccessUnit: [UInt8], what: String) throws {
        let units = AnnexBScanner.units(in: firstAccessUnit)
        guard let spsUnit = units.first(where: \.isSPS), let ppsUnit = units.first(where: \.isPPS) else {
            throw OutputError(.unwritable, "\(what): the first frame carries no SPS/PPS")
        }
        guard let stream = avformat_new_stream(context, nil) else {
            throw OutputError(.unwritable, "out of memory setting up \(what)")
        }
        let sps = try? SequenceParameterSet(nalUnit: spsUnit)
        let parameters = stream.pointee.codecpar!
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        parameters.pointee.codec_id = AV_CODEC_ID_H264
        parameters.pointee.width = Int32(clamping: sps?.width ?? 0)
        parameters.pointee.height = Int32(clamping: sps?.height ?? 0)
        let extradata = [0, 0, 0, 1] + spsUnit.bytes + [0, 0, 0, 1] + ppsUnit.bytes
        guard let copy = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
            throw OutputError(.unwritable, "out of memory setting up \(what)")
        }
        extradata.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        parameters.pointee.extradata = copy.assumingMemoryBound(to: UInt8.self)
        parameters.pointee.extradata_size = Int32(extradata.count)
        stream.pointee.time_base = AVRational(num: 1, den: 90_000)
        self.stream = stream
    }

    /// Writes one access unit as one packet: its time counted from the first one's, in the stream's
    /// time base, always later than the previous one (clamped and counted otherwise); key when it is
    /// an IDR. Returns av_write_frame's status. (The muxer may move the time base in its header.)
    mutating func write(_ chunk: StreamChunk, frameIntervalNanoseconds: UInt64?, into context: UnsafeMutablePointer<AVFormatContext>,
                        using packet: UnsafeMutablePointer<AVPacket>) -> Int32 {
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
        let stream = stream
        return chunk.bytes.withUnsafeMutableBytes { raw in
            av_packet_unref(packet)
            packet.pointee.data = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            packet.pointee.size = Int32(clamping: raw.count)
            packet.pointee.stream_index = stream.pointee.index
            packet.pointee.pts = timestamp
            packet.pointee.dts = timestamp
            if let frameIntervalNanoseconds {
                packet.pointee.duration = av_rescale_q(Int64(clamping: frameIntervalNanoseconds), nanoseconds, stream.pointee.time_base)
            }
            packet.pointee.flags = chunk.isIDR ? AV_PKT_FLAG_KEY : 0
            let written = av_write_frame(context, packet)
            packet.pointee.data = nil
            packet.pointee.size = 0
            return written
        }
    }
}
