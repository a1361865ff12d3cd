/// Where `AudioCapture` takes the recording's sound from: the built-in test tone or a microphone.
///
/// A source delivers samples on the recording's clock: sample `k` of what it writes was captured at
/// `captureTime(ofSample: k)`, which is the first frame's capture time plus `k` samples at the nominal
/// rate. A microphone keeps that true against its own clock's drift and its overruns (`MicrophoneSource`).
/// Not Sendable: one thread at a time uses it, the audio thread, then the one that finishes the sound
/// (`AudioCapture` hands it over whole, so the compiler checks that no other thread can reach it).
public protocol SoundSource: AnyObject {
    var format: AudioFormat { get }
    /// What it is, for the recording's first lines ("test tone 48000 Hz, mono").
    var summary: String { get }
    /// Starts capturing now, before the first frame, so the sound of the first moments is there when it
    /// comes (a microphone holds it in its buffer until `start`).
    func prepare() throws
    /// Sample 0 is the one captured at monotonic time `origin` (the first frame's).
    func start(origin: UInt64) throws
    /// Blocks until the next `count` samples are ready; false when `shouldStop` said so first.
    func waitForSamples(_ count: Int, shouldStop: () -> Bool) throws -> Bool
    /// Takes in, without waiting, whatever has been captured already (before the last samples are written at the end).
    func collectCaptured() throws
    /// `plane.count` samples of `channel` from `skipping` samples past the next one (the side encoder reads
    /// ahead of the main one); silence past what has been captured.
    func write(channel: Int, into plane: UnsafeMutableBufferPointer<Float>, skipping: Int)
    /// Moves past the samples just written.
    func advance(_ count: Int)
    /// The next sample to deliver.
    var position: UInt64 { get }
    func captureTime(ofSample index: UInt64) -> UInt64
    /// Releases the device; nothing is delivered after it.
    func stop()
    /// What happened on the way, for the recording's last lines (nil when there is nothing to say).
    var report: String? { get }
}

extension SoundSource {
    /// The next `plane.count` samples of `channel`; silence past what has been captured.
    public func write(channel: Int, into plane: UnsafeMutableBufferPointer<Float>) {
        write(channel: channel, into: plane, skipping: 0)
    }
}
