import CV4L2
import Frames

/// The stream's own state: what `start`, `nextFrame` and teardown change, behind the `stream` lock.
extension V4L2CaptureSource {
    /// What a stream changes as it runs: the ring, the decoders, the sequence and clock. Not Sendable:
    /// it lives in `stream` and is reached only through that lock.
    final class Stream {
        let jpegDecoder: MJPEGDecoder?
        /// For formats only libv4lconvert understands: it turns each frame into YUV 4:2:0 first.
        let libraryConverter: LibV4LConverter?
        var jpegSink: JPEGPictureSink?
        /// Why the last MJPEG frame was unusable, until a good one comes; undecodable frames
        /// are no sign of life, so a camera sending only those ends as stalled.
        var jpegFailure: MJPEGFrameError?
        var memory = V4L2_MEMORY_MMAP
        var buffersRequested = false
        var mappings: [[(base: UnsafeMutableRawPointer, length: Int)]] = []
        /// USERPTR: the pool buffer each ring slot holds while the camera owns it.
        var slots: [PixelBuffer?] = []
        let planeScratch = UnsafeMutablePointer<v4l2_plane>.allocate(capacity: Int(VIDEO_MAX_PLANES))
        var pool: PixelBufferPool?
        var streaming = false
        /// Ended (lost, stalled, stopped): the device is closed and never touched again.
        var tornDown = false
        var sequences = SequenceTracker()
        var clock: PresentationClock
        var captureTimes = CaptureTimeChoice()
        var lastSignOfLife: UInt64 = 0
        var framesSeen = 0
        var unqueued: [UInt32] = []
        /// Why the driver last refused a QBUF (kept with `unqueued`, for the message if it persists).
        var lastQueueError: V4L2IoctlError?
        var refusedQueueing = 0
        var spuriousWakeups = 0

        init(jpegDecoder: MJPEGDecoder?, libraryConverter: LibV4LConverter?, clock: PresentationClock) {
            self.jpegDecoder = jpegDecoder
            self.libraryConverter = libraryConverter
            self.clock = clock
        }

        deinit { planeScratch.deallocate() }
    }
}
