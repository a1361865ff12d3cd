import Audio
import CFFmpeg
import Hub
import Outputs

/// The sound track of a libavformat output beside its `VideoTrack`: one encoded audio packet per
/// AVPacket, timed from the same origin as the video (the file's first IDR).
///
/// Sound never runs ahead of the picture: a packet is written once the video written so far reaches
/// its end, and when the file ends (the recording stops, a segment is cut, the camera goes away) the
/// packets that begin before the video's end are written, the last one shortened to end with it, and
/// the rest are let go. So both tracks of every file start and end together.
struct AudioTrack {
    let stream: UnsafeMutablePointer<AVStream>
    let format: AudioTrackFormat
    private var lastTimestamp = Int64.min
    private let primingNanoseconds: Int64
    /// Added to each packet's time as it goes to the muxer (see init).
    private let writeOffsetNanoseconds: Int64
    /// Packets waiting for the video to reach their end (retained), oldest first.
    private var pending: [StreamChunk] = []
    /// Packets that began before the file's first picture, after its last, or overlapped the previous one.
    private(set) var droppedPackets = 0
    /// Where the sound taken so far ends, in nanoseconds from the origin.
    private(set) var latestEnd = Int64.min
    /// Through libavformat's interleaver (files, servers); off for the live view, whose fragments are
    /// cut after each picture and take whatever sound was written since, track by track.
    var interleaved = true
    /// At most this many packets wait for the video (about 10 s at 48 kHz): past it, the oldest is
    /// written anyway, so a picture that stopped cannot make sound pile up.
    static let mostPending = 512

    init(in context: UnsafeMutablePointer<AVFormatContext>, format: AudioTrackFormat, what: String) throws {
        guard let stream = avformat_new_stream(context, nil) else {
            throw OutputError(.unwritable, "out of memory setting up \(what)")
        }
        let status = format.describe(stream)
        guard status >= 0 else { throw OutputError(.unwritable, "\(what): cannot describe its \(format.codecName) track (\(status))") }
        stream.pointee.time_base = AVRational(num: 1, den: Int32(format.format.sampleRate))
        self.stream = stream
        self.format = format
        primingNanoseconds = Int64(format.format.nanoseconds(ofSample: UInt64(format.primingSamples)))
        // Matroska's muxer takes Opus's pre-skip off every timestamp itself (its CodecDelay): the packets
        // go to it that much later, or the sound plays 6.5 ms early (measured with ffmpeg's demuxer).
        let muxerTakesPriming = format.codec == .opus && String(cString: context.pointee.oformat.pointee.name).hasPrefix("matroska")
        writeOffsetNanoseconds = muxerTakesPriming ? primingNanoseconds : 0
        pending.reserveCapacity(64)
    }

    /// Lets go of the packets still waiting (the file failed or was abandoned).
    mutating func discard() {
        for chunk in pending { chunk.release() }
        pending.removeAll()
    }

    /// Where a packet's samples begin and end, in nanoseconds from `origin`: its presentation time is
    /// its first input sample's, so its own first sample comes the encoder's priming earlier (the first
    /// packets of a file begin before zero, and a player drops the priming: MP4's edit list; libavformat
    /// moves every track alike where a container cannot hold negative times).
    func span(of chunk: StreamChunk, origin: UInt64) -> (start: Int64, end: Int64) {
        let start = Int64(clamping: chunk.presentationTimeNanoseconds) - Int64(clamping: origin) - primingNanoseconds
        return (start, start + Int64(clamping: chunk.durationNanoseconds))
    }

    /// Takes one packet (`chunk.kind == .audio`) and writes what the video has reached.
    mutating func add(_ chunk: StreamChunk, origin: UInt64, videoEnd: UInt64, into context: UnsafeMutablePointer<AVFormatContext>,
                      using packet: UnsafeMutablePointer<AVPacket>) -> Int32 {
        guard chunk.presentationTimeNanoseconds >= origin else {
            droppedPackets += 1
            return 0
        }
        chunk.retain()
        pending.append(chunk)
        latestEnd = max(latestEnd, span(of: chunk, origin: origin).end)
        if pending.count > Self.mostPending {
            let oldest = pending.removeFirst()
            defer { oldest.release() }
            let status = write(oldest, origin: origin, trimmedTo: nil, into: context, using: packet)
            if status < 0 { return status }
        }
        return writePending(origin: origin, videoEnd: videoEnd, final: false, into: context, using: packet)
    }

    /// Removes and returns (each with its reference) the waiting packets that begin at or after
    /// `videoEnd`: at a cut they are the next file's sound, which came before its picture.
    mutating func takePending(beginningAtOrAfter videoEnd: UInt64, origin: UInt64) -> [StreamChunk] {
        let end = Int64(clamping: videoEnd) - Int64(clamping: origin)
        guard let first = pending.firstIndex(where: { span(of: $0, origin: origin).start >= end }) else { return [] }
        let taken = Array(pending[first...])
        pending.removeSubrange(first...)
        return taken
    }

    /// Writes the waiting packets that end by `videoEnd` (a presentation time); `final` (the file ends
    /// there), also the one that straddles it, shortened, and lets go of the rest.
    mutating func writePending(origin: UInt64, videoEnd: UInt64, final: Bool, into context: UnsafeMutablePointer<AVFormatContext>,
                               using packet: UnsafeMutablePointer<AVPacket>) -> Int32 {
        let end = Int64(clamping: videoEnd) - Int64(clamping: origin)
        var written = 0
        var status: Int32 = 0
        for chunk in pending {
            let span = span(of: chunk, origin: origin)
            if span.end <= end {
                status = write(chunk, origin: origin, trimmedTo: nil, into: context, using: packet)
            } else if final && span.start < end {
                status = write(chunk, origin: origin, trimmedTo: end, into: context, using: packet)
            } else if final {
                droppedPackets += 1
            } else {
                break
            }
            written += 1
            if status < 0 { break }
        }
        for chunk in pending[..<written] { chunk.release() }
        pending.removeFirst(written)
        if final { discard() }
        return status
    }

    /// One packet into the muxer (through its interleaver unless `interleaved` is off), its duration cut
    /// to end at `trimmedTo` (from the origin) if given.
    private mutating func write(_ chunk: StreamChunk, origin: UInt64, trimmedTo end: Int64?,
                                into context: UnsafeMutablePointer<AVFormatContext>, using packet: UnsafeMutablePointer<AVPacket>) -> Int32 {
        let nanoseconds = AVRational(num: 1, den: 1_000_000_000)
        let span = span(of: chunk, origin: origin)
        // Each packet's time from its own nanoseconds (never by adding durations), so a time base
        // coarser than the sample rate (Matroska's milliseconds) rounds but never drifts.
        let timestamp = av_rescale_q(span.start + writeOffsetNanoseconds, nanoseconds, stream.pointee.time_base)
        guard timestamp > lastTimestamp else {
            droppedPackets += 1
            return 0
        }
        lastTimestamp = timestamp
        let duration = av_rescale_q(min(span.end, end ?? span.end) - span.start, nanoseconds, stream.pointee.time_base)
        av_packet_unref(packet)
        packet.pointee.stream_index = stream.pointee.index
        packet.pointee.pts = timestamp
        packet.pointee.dts = timestamp
        packet.pointee.duration = max(1, duration)
        packet.pointee.flags = AV_PKT_FLAG_KEY
        return ChunkPacket.write(chunk, as: packet, interleaved: interleaved, into: context)
    }
}
