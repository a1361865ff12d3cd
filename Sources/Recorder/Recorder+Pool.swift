import Encoder
import Frames

extension Recorder {
    /// The pool every branch encodes from: with one encoder, the encoder's own (for VA-API its
    /// buffers are mapped GPU surfaces); with several, one plain pool in the format they share,
    /// big enough for each one's frames in flight and queued; `tapped`: frames are encoded for `/stream.mjpg` too.
    func makePool(for branches: [EncodingBranch], tapped: Bool = false) throws -> PixelBufferPool {
        let pictureTapBuffers = tapped ? 1 : 0
        let (width, height) = (source.frameSize.width, source.frameSize.height)
        if branches.count == 1 {
            let encoder = branches[0].encoder
            // A file source waits for a free buffer instead of dropping, so it needs no more buffers than
            // the encoder holds: any more only fill up (reading ahead of the encoder) and commit their
            // memory, 3 MiB each at 1080p, for no speed (libx264 copies the picture and hands the buffer
            // back before its threads encode it, so reading the next frame overlaps their work anyway).
            let headroom = source.isLive
                ? Self.stallHeadroom(framesPerSecond: source.framesPerSecond,
                                     frameBytes: encoder.inputFormat.packedFrameSize(width: width, height: height))
                : 0
            return encoder.makePool(width: width, height: height,
                                    capacity: encoder.maximumBuffersInFlight + headroom + source.poolBuffersHeld + pictureTapBuffers)
        }
        let format = branches[0].encoder.inputFormat
        if let other = branches.first(where: { $0.encoder.inputFormat != format }) {
            throw EncoderError(.unavailable, "\(branches[0].encoder.name) takes \(format) and \(other.encoder.name) \(other.encoder.inputFormat): "
                + "two encodings from one capture need one pixel format")
        }
        return PixelBufferPool(format: format, width: width, height: height,
                               capacity: sharedPoolEncodingCapacity(branches) + source.poolBuffersHeld + pictureTapBuffers)
    }

    /// The pool `run()` would make, before it runs (for tests).
    func makePool(tapped: Bool = false) throws -> PixelBufferPool {
        try unstartedBranches.withLock { branches in
            guard let branches else { preconditionFailure("the recording has run") }
            return try makePool(for: branches, tapped: tapped)
        }
    }

    /// Buffers several encodings of one source need between them. A live source's branches may each fall
    /// behind on their own, so each gets its frames in flight and its queue, plus spares for the capture side.
    /// A file's reading waits for a free buffer, and every branch holds the same frames: the slowest
    /// encoder's in flight and the one queued behind them are enough to keep it busy (it takes the queued one
    /// the moment it hands one back, and the reader refills that one meanwhile). Each buffer more only held
    /// a frame read ahead, 3 MiB at 1080p.
    func sharedPoolEncodingCapacity(_ branches: [EncodingBranch]) -> Int {
        guard source.isLive else {
            return (branches.map(\.encoder.maximumBuffersInFlight).max() ?? 1) + branchQueueDepth
        }
        return branches.reduce(0) { $0 + $1.encoder.maximumBuffersInFlight + branchQueueDepth } + Self.minimumSpareBuffers
    }

    /// Spare pool buffers for a live source beyond those the encoder and the source hold: frames
    /// that wait while the encoder is held up (its cold first frames, another process on the CPU, a slow disk)
    /// instead of being dropped. Two seconds of video within 64 MiB, never fewer than 4. A
    /// buffer's memory is committed when first written, so spares a recording never needs cost
    /// nothing. (In the test VM, 4 spares at 10 fps ran out while camrec itself started up.)
    static func stallHeadroom(framesPerSecond: Double, frameBytes: Int) -> Int {
        guard framesPerSecond.isFinite, framesPerSecond > 0, frameBytes > 0 else { return minimumSpareBuffers }
        let twoSeconds = Int(min(framesPerSecond * 2, 1_000).rounded(.up))
        let withinBudget = (64 << 20) / frameBytes
        return max(minimumSpareBuffers, min(twoSeconds, withinBudget))
    }

    /// Frames each of several encodings may be behind: half a second for a live source, so that a slow
    /// start costs no skip; one for a file, whose reading simply waits (deeper queues only filled up
    /// with frames read ahead, and committed their memory: 305 MB at 1080p for H.264 and H.265 with
    /// 30, 206 MB with 2 and four spares, 189 MB with 1 and none; the same speed).
    var branchQueueDepth: Int {
        source.isLive ? EncodingBranch.queueDepth(framesPerSecond: source.framesPerSecond) : 1
    }

    /// Spare pool buffers for a live source whatever its rate: the capture side always has one to fill next.
    static let minimumSpareBuffers = 4
}
