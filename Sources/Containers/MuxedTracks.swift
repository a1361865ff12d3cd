import CFFmpeg
import Hub

/// The tracks of one libavformat output (a file's container, a media server's session): the video,
/// and the recording's sound beside it when there is one. Shared by `LibavContainerWriter` and
/// `MediaServerTransport`, so the rules that keep sound with the picture are written once: audio
/// packets are timed from the video's first access unit, written once the video reaches their end,
/// and at the end cut to the video's end.
struct MuxedTracks {
    private(set) var video: VideoTrack
    private var audio: AudioTrack?
    /// Where the video written so far ends: the newest frame's presentation time plus a frame.
    private var videoEnd: UInt64?
    /// The nominal frame interval, for the video's end.
    private let frameIntervalNanoseconds: UInt64
    /// Each video packet carries its duration (files; a live session leaves it to the next one).
    private let writesDurations: Bool
    private let interleaved: Bool

    /// - Parameter interleaved: through libavformat's interleaver (off for the live view's per-frame fragments).
    init(video: VideoTrack, audio: AudioTrack?, frameIntervalNanoseconds: UInt64, writesDurations: Bool, interleaved: Bool = true) {
        self.video = video
        var audio = audio
        audio?.interleaved = interleaved
        self.audio = audio
        self.interleaved = interleaved
        self.frameIntervalNanoseconds = frameIntervalNanoseconds
        self.writesDurations = writesDurations
    }

    var clampedTimestamps: Int { video.clampedTimestamps }
    var droppedAudioPackets: Int { audio?.droppedPackets ?? 0 }

    /// Writes an access unit, or takes an audio packet; returns libavformat's status.
    mutating func write(_ chunk: StreamChunk, into context: UnsafeMutablePointer<AVFormatContext>,
                        using packet: UnsafeMutablePointer<AVPacket>) -> Int32 {
        if chunk.kind == .audio {
            guard var audio, let origin = video.firstPresentation, let videoEnd else { return 0 }
            defer { self.audio = audio }
            return audio.add(chunk, origin: origin, videoEnd: videoEnd, into: context, using: packet)
        }
        var status = video.write(chunk, frameIntervalNanoseconds: writesDurations ? frameIntervalNanoseconds : nil, into: context,
                                 using: packet, interleaved: audio != nil && interleaved)
        let end = chunk.presentationTimeNanoseconds &+ frameIntervalNanoseconds
        videoEnd = max(videoEnd ?? end, end)
        // The sound the picture has now reached.
        if status >= 0, var audio, let origin = video.firstPresentation, let videoEnd {
            status = audio.writePending(origin: origin, videoEnd: videoEnd, final: false, into: context, using: packet)
            self.audio = audio
        }
        return status
    }

    /// The output ends: the sound up to the picture's end, the last packet shortened to end with it, none after.
    mutating func finishSound(into context: UnsafeMutablePointer<AVFormatContext>, using packet: UnsafeMutablePointer<AVPacket>) -> Int32 {
        guard var audio, let origin = video.firstPresentation, let videoEnd else { return 0 }
        defer { self.audio = audio }
        return audio.writePending(origin: origin, videoEnd: videoEnd, final: true, into: context, using: packet)
    }

    /// Whether the audio packet `chunk` begins before the video written so far ends.
    func beginsBeforeVideoEnd(_ chunk: StreamChunk) -> Bool {
        guard let audio, let origin = video.firstPresentation, let videoEnd else { return false }
        return audio.span(of: chunk, origin: origin).start < Int64(clamping: videoEnd) - Int64(clamping: origin)
    }

    /// Removes and returns the audio packets waiting here that begin at or after the video's end.
    mutating func takeSoundPastVideoEnd() -> [StreamChunk] {
        guard var audio, let origin = video.firstPresentation, let videoEnd else { return [] }
        defer { self.audio = audio }
        return audio.takePending(beginningAtOrAfter: videoEnd, origin: origin)
    }

    /// The sound taken so far reaches the video's end (always, without sound).
    var soundReachesVideoEnd: Bool {
        guard let audio, let origin = video.firstPresentation, let videoEnd else { return true }
        return audio.latestEnd >= Int64(clamping: videoEnd) - Int64(clamping: origin)
    }

    /// Lets go of audio packets still waiting (the output failed or was dropped).
    mutating func discard() {
        audio?.discard()
    }
}
