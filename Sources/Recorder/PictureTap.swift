import Encoder
import Frames
import Hub
import Logging
import Threading
import Synchronization

/// `/stream.mjpg` for a raw camera or the test pattern: one JPEG encode of a frame, on a thread of its
/// own, shared by every viewer through the feed. Only a frame some viewer is due for is offered, and
/// only while the last one is done, so nobody watching costs nothing and a slow encode skips frames
/// rather than delaying the recording (which never waits for it).
final class PictureTap: Sendable {
    private let feed: JPEGFeed
    /// Made by `init` (so a failure shows before the recording), taken by the thread `start` starts.
    private let idleEncoder: Mutex<JPEGPictureEncoder?>
    private let queue = BlockingQueue<PixelBuffer>(capacity: 1)
    private let busy = Atomic<Bool>(false)
    private let failed = Atomic<Bool>(false)
    private let worker = Mutex<WorkerThread?>(nil)
    private let logger: Logger

    init(feed: JPEGFeed, frameSize: FrameSize, logger: Logger) throws {
        self.feed = feed
        self.logger = logger
        idleEncoder = Mutex(try JPEGPictureEncoder(width: frameSize.width, height: frameSize.height))
    }

    func start(release: SharedFrameRelease) {
        guard let encoder = idleEncoder.withLock({ $0.take() }) else { return }
        let worker = WorkerThread(name: "jpeg") { [self] in
            while let buffer = queue.pop() {
                if !failed.load(ordering: .relaxed) {
                    do throws(JPEGPictureEncoder.Failure) {
                        try encoder.encode(buffer) { jpeg in
                            feed.publish(jpeg: jpeg, sequence: buffer.sequence, presentationTimeNanoseconds: buffer.presentationTimeNanoseconds)
                        }
                    } catch {
                        failed.store(true, ordering: .relaxed)
                        logger.warning("/stream.mjpg stops: \(error); the recording goes on")
                    }
                }
                release.release(buffer)
                busy.store(false, ordering: .releasing)
            }
        }
        self.worker.withLock { $0 = worker }
        worker.start()
    }

    /// Whether to offer `buffer`: a viewer is due for it and no other frame is being encoded.
    func wants(_ buffer: PixelBuffer) -> Bool {
        !busy.load(ordering: .acquiring) && !failed.load(ordering: .relaxed)
            && feed.wants(presentationTimeNanoseconds: buffer.presentationTimeNanoseconds)
    }

    /// Takes the frame (it releases it when encoded); false if it cannot now.
    func offer(_ buffer: PixelBuffer) -> Bool {
        busy.store(true, ordering: .relaxed)
        if queue.tryPush(buffer) { return true }
        busy.store(false, ordering: .relaxed)
        return false
    }

    /// Encodes what it holds and stops.
    func finish() {
        queue.close()
        worker.withLock { $0.take() }?.join()
    }
}
