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

/// The recording's PCM encoded a second time for a `SoundSideFeed`, on the audio thread, from the very
/// samples the main encoder's frames are filled with. They come in the main encoder's frame size (AAC's
/// 1024) and leave in this encoder's (Opus's 960 at 48 kHz), through planes kept here: nothing is
/// allocated per packet. Not Sendable: the audio thread's, inside `AudioCapture`'s engine.
final class SoundSideEncoder {
    let encoder: SoundEncoder
    let feed: any SoundSideFeed
    private let capacity: Int
    private let planes: UnsafeMutableBufferPointer<Float>
    /// Samples per channel copied in and not yet encoded.
    private var filled = 0
    /// Samples handed to the encoder so far.
    private var fed: Int64 = 0
    /// The source's sample that the encoder's sample 0 stands for: set again when encoding resumes after
    /// a time nobody wanted it, so that the encoder's continuous count maps onto the source's clock.
    private var offset: Int64 = 0
    private var running = false
    private let primingNanoseconds: UInt64

    /// `mostPerFrame`: the most samples the main encoder takes in one frame.
    init(encoder: SoundEncoder, feed: any SoundSideFeed, mostPerFrame: Int) {
        self.encoder = encoder
        self.feed = feed
        capacity = mostPerFrame + encoder.frameSize
        planes = .allocate(capacity: capacity * encoder.format.channels)
        planes.initialize(repeating: 0)
        primingNanoseconds = encoder.format.nanoseconds(ofSample: UInt64(encoder.track.primingSamples))
    }

    deinit { planes.deallocate() }

    /// Before a main frame whose first sample is the source's `first` is filled: whether to copy it
    /// (someone wants the packets). Resuming drops what was left over from before the pause.
    func begin(atSourceSample first: UInt64) -> Bool {
        let wanted = feed.isWanted
        if wanted && !running {
            filled = 0
            offset = Int64(first) - fed
        }
        running = wanted
        return wanted
    }

    /// A channel's plane of the main frame, as it was filled.
    func copy(channel: Int, _ plane: UnsafeMutableBufferPointer<Float>) {
        let count = min(plane.count, capacity - filled)
        guard count > 0, let from = plane.baseAddress else { return }
        (planes.baseAddress! + channel * capacity + filled).update(from: from, count: count)
    }

    /// After the main frame of `count` samples: encodes every whole frame held and hands its packets to the feed.
    func encodeReady(count: Int, source: any SoundSource) throws {
        filled = min(filled + count, capacity)
        let size = encoder.frameSize
        let channels = encoder.format.channels
        while filled >= size {
            let planes = self.planes
            let capacity = self.capacity
            try encoder.encode(sampleCount: size, fill: { channel, plane in
                plane.baseAddress!.update(from: planes.baseAddress! + channel * capacity, count: size)
            }, emit: { packet in deliver(packet, source: source) })
            fed += Int64(size)
            filled -= size
            for channel in 0..<channels where filled > 0 {
                let start = planes.baseAddress! + channel * capacity
                start.update(from: start + size, count: filled)
            }
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
