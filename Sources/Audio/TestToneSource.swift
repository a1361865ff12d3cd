import Glibc
import Frames

/// `--audio test`: silence but for a 10 ms 1 kHz burst starting at the first sample of each second,
/// on the recording's clock (sample 0 is captured when the first frame is), paced in real time like a
/// microphone. With it the test pattern turns the lower half of the first frame of each second white,
/// so the offset between sound and picture can be measured from the output alone.
public final class TestToneSource: SoundSource {
    public let format: AudioFormat
    public var summary: String { "test tone \(format)" }
    /// A 1 kHz burst this long at the start of every second.
    public static let burstNanoseconds: UInt64 = 10_000_000
    public static let burstHertz = 1000.0
    public static let burstAmplitude: Float = 0.5

    private var origin: UInt64 = 0
    /// The next sample to deliver, counted from sample 0.
    public private(set) var position: UInt64 = 0
    private let burstSamples: UInt64

    public init(format: AudioFormat) {
        self.format = format
        burstSamples = UInt64(format.sampleRate) * Self.burstNanoseconds / 1_000_000_000
    }

    /// Sample 0 is captured at monotonic time `origin`.
    public func start(origin: UInt64) {
        self.origin = origin
        position = 0
    }

    /// The capture time of sample `index`.
    public func captureTime(ofSample index: UInt64) -> UInt64 {
        origin + format.nanoseconds(ofSample: index)
    }

    public func waitForSamples(_ count: Int, shouldStop: () -> Bool) throws -> Bool {
        // A block is delivered once its last sample has been captured, as a microphone's period is.
        MonotonicClock.sleep(until: due(count))
        return !shouldStop()
    }

    /// Made on demand: nothing to start.
    public func prepare() {}

    /// Every sample is there to be made at once.
    public func collectCaptured() {}
    public func stop() {}
    public var report: String? { nil }

    /// When the next `count` samples have all been captured (a microphone delivers them then).
    public func due(_ count: Int) -> UInt64 {
        captureTime(ofSample: position + UInt64(count))
    }

    /// Writes channel `channel` of `plane.count` samples from `skipping` past the next (every channel the same).
    public func write(channel: Int, into plane: UnsafeMutableBufferPointer<Float>, skipping: Int) {
        let rate = UInt64(format.sampleRate)
        let step = 2 * Double.pi * Self.burstHertz / Double(rate)
        let first = position + UInt64(skipping)
        for i in 0..<plane.count {
            let inSecond = (first + UInt64(i)) % rate
            plane[i] = inSecond < burstSamples ? Self.burstAmplitude * Float(sin(step * Double(inSecond))) : 0
        }
    }

    /// Moves past the `count` samples just written.
    public func advance(_ count: Int) {
        position += UInt64(count)
    }
}
