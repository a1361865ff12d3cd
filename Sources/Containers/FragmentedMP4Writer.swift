import Bitstream
import Hub
import Outputs

/// One recording file (H.264 or H.265) in fragmented MP4, written in Swift, without libavformat: an
/// MP4 recording then maps none of libav*'s ~135 libraries (issue 51).
///
/// The file is written as a stream, never seeked, as `LibavContainerWriter` writes MP4: `ftyp`, an
/// empty `moov` (the sample entry, `avc1`+`avcC` or `hvc1`+`hvcC`, from the first IDR's parameter
/// sets), then a `moof`+`mdat` fragment at every IDR and whenever the next frame is a second or more
/// after the fragment's first, and `mfra` at the end. A fragment is written whole once the frame after
/// it arrives (or the file ends), then the sink's boundary is committed: after SIGKILL or a power cut
/// the `.partial` plays up to its last fragment.
///
/// Samples are the access units as they come, length-prefixed, parameter sets in-band before every IDR
/// (the stream contract). Times are the frames' presentation times (their capture times) on a 90 kHz
/// clock from the file's first frame, so dropped frames are gaps; each sample lasts until the next, the
/// last one a nominal frame interval. A time that does not move forward is moved just past the previous
/// one and counted. Video only: a recording with sound goes through `LibavContainerWriter`.
public final class FragmentedMP4Writer: ContainerWriter {
    public let codec: VideoCodec
    public private(set) var clampedTimestamps = 0

    /// The video track's clock.
    static let timescale: UInt32 = 90_000

    private let sink: ByteSink
    private let frameInterval: UInt64
    private var firstPresentation: UInt64?
    /// The newest sample's time.
    private var lastTime: UInt64?
    private var fragment = MP4Fragment()
    /// The next fragment's moof (and mdat header), or the file's header; reused.
    private var boxes = MP4BoxBuffer(capacity: 4096)
    private var sequence: UInt32 = 0
    /// Bytes written so far: where the next fragment begins, for `mfra`.
    private var written: UInt64 = 0
    /// Each fragment that begins with an IDR: its first sample's time and where its moof is (`tfra`).
    private var randomAccess: [(time: UInt64, offset: UInt64)] = []
    private var finished = false

    /// The most a fragment gathers before it is written, whatever the times say: a camera whose clock
    /// stands still (every frame moved one tick past the last) and that sends no IDR would otherwise
    /// grow one fragment without end. 64 MiB is several seconds of a 4K stream at 100 Mbit/s, and keeps
    /// `mdat`'s 32-bit size true.
    private let maximumFragmentBytes: Int

    /// - Parameter framesPerSecond: the source's rate, for the last frame's duration.
    public init(codec: VideoCodec = .h264, sink: ByteSink, framesPerSecond: Double, maximumFragmentBytes: Int = 64 << 20) {
        self.codec = codec
        self.sink = sink
        self.maximumFragmentBytes = max(1, maximumFragmentBytes)
        let fps = framesPerSecond.isFinite && framesPerSecond > 0 ? framesPerSecond : 30
        frameInterval = max(1, UInt64((Double(Self.timescale) / fps).rounded()))
        randomAccess.reserveCapacity(256)
    }

    /// Nanoseconds as 90 kHz ticks, rounded to the nearest.
    static func ticks(_ nanoseconds: UInt64) -> UInt64 {
        nanoseconds / 100_000 * 9 + (nanoseconds % 100_000 * 9 + 50_000) / 100_000
    }

    public func write(_ chunk: StreamChunk) throws {
        // Sound is not taken here (a recording with sound uses LibavContainerWriter).
        guard chunk.kind == .video, !finished else { return }
        if firstPresentation == nil { try start(with: chunk) }
        let first = firstPresentation!
        var time = Self.ticks(chunk.presentationTimeNanoseconds >= first ? chunk.presentationTimeNanoseconds - first : 0)
        if let lastTime, time <= lastTime {
            time = lastTime + 1
            clampedTimestamps += 1
        }
        // A fragment at every IDR, and at least every second, as libavformat's frag_keyframe + frag_duration;
        // and once it holds `maximumFragmentBytes`.
        if !fragment.isEmpty && (chunk.isIDR || time - fragment.startTime >= UInt64(Self.timescale)
                                 || fragment.data.count >= maximumFragmentBytes) {
            try writeFragment(endingAt: time)
        }
        lastTime = time
        chunk.bytes.withUnsafeBytes { fragment.add($0, time: time, sync: chunk.isIDR) }
    }

    /// The header, described by the file's first access unit (an IDR with its parameter sets).
    private func start(with chunk: StreamChunk) throws {
        let entry = try MP4SampleEntry(codec: codec, firstAccessUnit: chunk.bytes, what: "the mp4 file \(sink.label)")
        boxes.reset()
        MP4Header.write(entry, timescale: Self.timescale, into: &boxes)
        try boxes.bytes.withUnsafeBytes { try sink.write($0) }
        written += UInt64(boxes.count)
        firstPresentation = chunk.presentationTimeNanoseconds
        sink.commitBoundary()
    }

    private func writeFragment(endingAt endTime: UInt64) throws {
        sequence += 1
        if fragment.startsWithSync { randomAccess.append((fragment.startTime, written)) }
        boxes.reset()
        fragment.writeHeader(sequence: sequence, endTime: endTime, into: &boxes)
        try boxes.bytes.withUnsafeBytes { try sink.write($0) }
        try fragment.data.withUnsafeBytes { try sink.write($0) }
        written += UInt64(boxes.count + fragment.data.count)
        fragment.reset()
        sink.commitBoundary()
    }

    public func finish() throws {
        guard firstPresentation != nil, !finished else { return }
        finished = true
        if let lastTime, !fragment.isEmpty { try writeFragment(endingAt: lastTime + frameInterval) }
        boxes.reset()
        writeRandomAccess(into: &boxes)
        try boxes.bytes.withUnsafeBytes { try sink.write($0) }
        written += UInt64(boxes.count)
        sink.commitBoundary()
    }

    /// `mfra`: where each fragment that starts with an IDR begins, for players that seek.
    private func writeRandomAccess(into boxes: inout MP4BoxBuffer) {
        // mfra's header, tfra (full box header, 3 fields, 19 bytes an entry), mfro.
        let size = 8 + 12 + 12 + 19 * randomAccess.count + 16
        boxes.box("mfra") { mfra in
            mfra.box("tfra", version: 1) { tfra in
                tfra.u32(MP4Header.trackID)
                tfra.u32(0)                           // 1-byte traf, trun and sample numbers
                tfra.u32(UInt32(randomAccess.count))
                for entry in randomAccess {
                    tfra.u64(entry.time)
                    tfra.u64(entry.offset)
                    tfra.u8(1)
                    tfra.u8(1)
                    tfra.u8(1)
                }
            }
            mfra.box("mfro", version: 0) { mfro in
                mfro.u32(UInt32(size))                // the whole mfra's size
            }
        }
    }
}
