/// Where a second encoding of the recording's sound goes (the WebRTC viewers' one Opus encode): a feed of
/// its own beside the hubs, so that no file output records it.
public protocol SoundSideFeed: AnyObject, Sendable {
    /// Whether anyone takes packets now: the second encoding runs only while this holds.
    var isWanted: Bool { get }
    /// One packet, valid only during the call, on the audio thread (so it must not wait on a viewer):
    /// `captureNanoseconds` is the capture time of the first sample a decoder puts out for it (the
    /// encoder's priming included), `durationNanoseconds` how long it plays.
    func deliver(_ packet: UnsafeRawBufferPointer, captureNanoseconds: UInt64, durationNanoseconds: UInt64)
}

/// The recording's PCM encoded a second time for a `SoundSideFeed`, on the audio thread, straight from the
/// source: each frame (Opus's 10 ms) is encoded as soon as its last sample has been captured, not once the
/// main encoder's frame (AAC's 1024 samples, 21.3 ms) is full. The audio thread waits for the nearer of
/// the two (`samplesToWaitFor`); this encoder reads the source's samples past its position, which the main
/// encoder takes later. Through planes kept here: nothing is allocated per packet. Not Sendable: the audio
/// thread's, inside `AudioCapture`'s engine.
final class SoundSideEncoder {
    let encoder: SoundEncoder
    let feed: any SoundSideFeed
    /// One frame of each channel: samples[c * frameSize ..< c * frameSize + filled].
    private let planes: UnsafeMutableBufferPointer<Float>
    /// The next source sample to copy; the `filled` before it wait in the planes.
    private var next: UInt64 = 0
    private var filled = 0
    /// Samples handed to the encoder so far.
    private var fed: Int64 = 0
    /// The source's sample that the encoder's sample 0 stands for: set again when encoding resumes after
    /// a time nobody wanted it, so that the encoder's continuous count maps onto the source's clock.
    private var offset: Int64 = 0
    private var running = false
    private let primingNanoseconds: UInt64

    init(encoder: SoundEncoder, feed: any SoundSideFeed) {
        self.encoder = encoder
        self.feed = feed
        planes = .allocate(capacity: encoder.frameSize * encoder.format.channels)
        planes.initialize(repeating: 0)
        primingNanoseconds = encoder.format.nanoseconds(ofSample: UInt64(encoder.track.primingSamples))
    }

    deinit { planes.deallocate() }

    /// How many samples past the source's position the audio thread waits for next: the main encoder's
    /// `mainFrame`, or fewer when this encoder's next frame is complete sooner. Checks whether anyone wants
    /// the packets; resuming after a pause drops what was left over from before it.
    func samplesToWaitFor(mainFrame: Int, source: any SoundSource) -> Int {
        let position = source.position
        let wanted = feed.isWanted
        if wanted && !running {
            filled = 0
            next = position
            offset = Int64(position) - fed
        }
        running = wanted
        guard wanted else { return mainFrame }
        precondition(next >= position, "the side encoder keeps ahead of the main one")
        return min(mainFrame, Int(next - position) + encoder.frameSize - filled)
    }

    /// After the source has `ready` samples past its position (and before the main encoder moves past
    /// them): copies those not copied yet and encodes every whole frame, handing its packets to the feed.
    func take(ready: Int, source: any SoundSource) throws {
        guard running else { return }
        let end = source.position + UInt64(ready)
        let size = encoder.frameSize
        let planes = self.planes
        while next < end {
            let count = min(Int(end - next), size - filled)
            let skip = Int(next - source.position)
            for channel in 0..<encoder.format.channels {
                source.write(channel: channel, into: UnsafeMutableBufferPointer(start: planes.baseAddress! + channel * size + filled, count: count),
                             skipping: skip)
            }
            filled += count
            next += UInt64(count)
            guard filled == size else { continue }
            try encoder.encode(sampleCount: size, fill: { channel, plane in
                plane.baseAddress!.update(from: planes.baseAddress! + channel * size, count: size)
            }, emit: { packet in deliver(packet, source: source) })
            fed += Int64(size)
            filled = 0
        }
    }

    private func deliver(_ packet: SoundEncoder.Packet, source: any SoundSource) {
        // The packet's first real input sample on the source's clock; a decoder puts out the priming first.
        let firstInput = packet.firstSample + Int64(encoder.track.primingSamples) + offset
        guard firstInput >= 0, packet.sampleCount > 0 else { return }
        let capture = source.captureTime(ofSample: UInt64(firstInput))
        guard capture >= primingNanoseconds else { return }
        feed.deliver(packet.bytes, captureNanoseconds: capture - primingNanoseconds,
                     durationNanoseconds: encoder.format.nanoseconds(ofSample: UInt64(packet.sampleCount)))
    }
}
