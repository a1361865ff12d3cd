import Frames

/// What a sound source delivers: samples a second and channels. Samples travel as 32-bit float,
/// one plane per channel (what libavcodec's AAC encoder takes).
public struct AudioFormat: Sendable, Equatable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int

    /// The rates camrec records at (AAC's sampling-frequency table from 8 to 96 kHz).
    public static let sampleRates = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000]
    public static let channelRange = 1...8

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public var description: String {
        "\(sampleRate) Hz, \(channels == 1 ? "mono" : channels == 2 ? "stereo" : "\(channels) channels")"
    }

    /// Nanoseconds from sample 0 to sample `index`, exact (rounded down) with no overflow for years: a
    /// sample is timed as a frame at `sampleRate` frames a second.
    public func nanoseconds(ofSample index: UInt64) -> UInt64 {
        presentationTime(of: index, rate: (numerator: Int32(sampleRate), denominator: 1))
    }
}
