import Bitstream
import Encoder
import Frames
import Hub
import Outputs
import Threading
import Synchronization

/// One encoder, the stream writer that keeps its output to camrec's contract, and the hub its stream
/// is published to (the outputs subscribe there; the branch does not know them). A recording has one branch, or one per codec when it makes two encodings from one
/// capture (`live.h264 archive.h265`); then each branch encodes on its own thread from a short
/// queue of the shared pool buffers, and a branch that falls behind skips frames rather than make
/// the other wait (a skipped forced IDR is forced at its next frame instead).
///
/// Not Sendable: a recording's threads own it, in turn. The `Recorder` keeps its branches unused until
/// `run()` takes them; run starts the encoder (writer, queue and worker set there), gives the branch to
/// its encoder thread through `WorkerThread` (the thread bridge), and reads the counters after joining it.
public final class EncodingBranch {
    public let encoder: VideoEncoder
    public let hub: StreamHub
    public let codec: VideoCodec
    var writer: AnnexBStreamWriter

    // Touched only by the thread that runs this encoder (its callbacks included), then by run after the join.
    var idrCount = 0
    var repairedCount = 0
    var firstPresentation: UInt64?
    var encoderFailed = false

    // The recording thread's: the encoder thread and its queue of (frame, force an IDR).
    var queue: BlockingQueue<BranchWork>?
    var worker: WorkerThread?
    /// A forced IDR this branch had to skip: the next frame it takes becomes one.
    var owesIDR = false
    /// Frames it skipped because its queue was full (several branches only).
    var skippedFrames = 0

    /// Frames a branch may be behind before it skips: half a second, so an encoder's slow start
    /// (libx265 sets up its first frames) or a moment of contention costs nothing but pool memory.
    static func queueDepth(framesPerSecond: Double) -> Int {
        guard framesPerSecond.isFinite else { return 3 }
        return min(30, max(3, Int(framesPerSecond / 2)))
    }

    /// - Parameter layout: `.bare` (parameter sets and slices only, the default) or the encoder's
    ///   SEI and AUD kept (`--encoder-sei`).
    public init(encoder: VideoEncoder, hub: StreamHub, codec: VideoCodec, slicesPerPicture: Int = 1,
                layout: AnnexBStreamWriter.Layout = .bare) {
        self.encoder = encoder
        self.hub = hub
        self.codec = codec
        // A camera's slices are passed on however many there are (the encoder reports it; inspect says so).
        writer = AnnexBStreamWriter(codec: codec, layout: layout,
                                    maxSlicesPerPicture: encoder.isPassthrough ? nil : max(1, slicesPerPicture))
    }
}

/// Hands each pool buffer back once every branch's encoder (and the JPEG tap, for a frame it takes) is
/// done with it. With one branch and no tap there is nothing to count: a buffer goes straight back to
/// the pool, with no lock and no table on the hot path.
final class SharedFrameRelease: Sendable {
    private let holders = Mutex<[ObjectIdentifier: Int]>([:])
    private let pool: PixelBufferPool
    private let branchCount: Int
    private let counting: Bool

    init(pool: PixelBufferPool, branchCount: Int, tapped: Bool = false) {
        self.pool = pool
        self.branchCount = branchCount
        counting = branchCount > 1 || tapped
        if counting { holders.withLock { $0.reserveCapacity(pool.capacity) } }
    }

    /// The buffer goes to every branch, and to `extra` holders more (the JPEG tap).
    func hold(_ buffer: PixelBuffer, extra: Int = 0) {
        guard counting else { return }
        holders.withLock { $0[ObjectIdentifier(buffer)] = branchCount + extra }
    }

    /// One encoder (or a branch that skipped it, or the tap) is done with the buffer.
    func release(_ buffer: PixelBuffer) {
        guard counting else { return pool.recycle(buffer) }
        let last = holders.withLock { h -> Bool in
            let id = ObjectIdentifier(buffer)
            let left = (h[id] ?? 1) - 1
            if left > 0 {
                h[id] = left
                return false
            }
            h[id] = nil
            return true
        }
        if last { pool.recycle(buffer) }
    }
}
