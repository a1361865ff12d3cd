import Bitstream
import Frames

/// H.264 profiles camrec offers.
public enum H264Profile: String, Sendable, CaseIterable {
    case baseline, main, high
}

/// What every encoder backend is asked for.
public struct EncoderSettings: Sendable {
    public var codec: VideoCodec
    public var size: FrameSize
    public var framesPerSecond: Double
    /// An IDR every this many frames; the recorder forces them, and backends also
    /// set their own GOP length to it so they never add IDRs of their own.
    public var keyframeInterval: Int
    /// Target bits per second; nil lets the backend choose from size and rate.
    public var bitrate: Int?
    /// Constant QP instead of a bitrate, where the backend supports it.
    public var constantQP: Int?
    /// H.264 only; H.265 is Main (8-bit 4:2:0).
    public var profile: H264Profile
    /// libx264/libx265 speed preset (ultrafast … veryslow).
    public var preset: String
    /// Slice NAL units per picture. One (the default) keeps every picture in one NAL unit,
    /// which receivers that hand one NAL unit at a time to a decoder need.
    public var slicesPerPicture: Int
    /// libx264 threads when there is one slice per picture: 1 encodes on one thread with no
    /// added latency; more use frame threads (more throughput, a frame of delay per thread);
    /// 0 lets x264 choose from the cores. Sliced threads are used only with several slices.
    public var softwareThreads: Int
    /// Planar I420 input for libx264 too (it takes NV12 otherwise): two encodings from one capture
    /// share one pool, and libx265 takes no NV12.
    public var planarInput = false
    /// Let the encoder write its own SEI (`--encoder-sei`). Off, h264_vaapi writes none: no HRD
    /// buffering period or picture timing, no identifier, and so no HRD parameters in its SPS either,
    /// which keeps the SPS inside seed 001's 35-byte window (40 bytes with them).
    public var encoderSEI = false

    public init(codec: VideoCodec = .h264, size: FrameSize, framesPerSecond: Double, keyframeInterval: Int, bitrate: Int? = nil,
                constantQP: Int? = nil, profile: H264Profile = .high, preset: String = "veryfast",
                slicesPerPicture: Int = 1, softwareThreads: Int = 1) {
        self.codec = codec
        self.size = size
        self.framesPerSecond = framesPerSecond
        self.keyframeInterval = keyframeInterval
        self.bitrate = bitrate
        self.constantQP = constantQP
        self.profile = profile
        self.preset = preset
        self.slicesPerPicture = max(1, slicesPerPicture)
        self.softwareThreads = max(0, softwareThreads)
    }

    /// A bitrate that looks good for live video: about 0.1 bit per pixel per frame.
    public var effectiveBitrate: Int {
        bitrate ?? max(200_000, Int(Double(size.width * size.height) * framesPerSecond * 0.1))
    }

    /// The frame rate as a rational, exact for integers and NTSC rates.
    public var frameRateRational: (numerator: Int32, denominator: Int32) {
        if framesPerSecond == framesPerSecond.rounded() { return (Int32(framesPerSecond), 1) }
        let ntsc = (framesPerSecond * 1001).rounded()
        if abs(ntsc / 1001 - framesPerSecond) < 0.0005 { return (Int32(ntsc), 1001) }
        return (Int32((framesPerSecond * 1000).rounded()), 1000)
    }
}
