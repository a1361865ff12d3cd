import Frames
import Hub
import Motion
import Outputs
import Threading
import Synchronization

/// Motion, as triggers: confirmed motion starts or extends an event, at most every half second of
/// video while it lasts (a trigger a frame would only move the clip's end by a frame each time), and
/// once more with its last frame when it stops, so a clip ends exactly post-roll after the last motion. The
/// detector runs on the recording thread; the triggers go to a thread of their own, so opening a clip's
/// file (a slow disk) never holds up the recording.
final class MotionWatcher: Sendable {
    let events: EventRecorder
    /// What the recording thread looks with, once per frame (so the lock is never contended).
    private struct Looking {
        let detector: MotionDetector
        var lastTrigger: UInt64?
        /// The newest frame with motion that no trigger has carried yet (the half-second limit held it back).
        var untriggered: (frame: StreamHub.PublishedFrame, score: Double)?
    }
    private let looking: Mutex<Looking>
    private let triggers = BlockingQueue<(frame: StreamHub.PublishedFrame, score: Double)>(capacity: 8)
    private let worker = Mutex<WorkerThread?>(nil)
    /// Set when the recording has ended: queued triggers are dropped (no clip can grow any more).
    private let stopping = Atomic<Bool>(false)
    static let triggerEveryNanoseconds: UInt64 = 500_000_000

    init(detector: sending MotionDetector, events: EventRecorder) {
        looking = Mutex(Looking(detector: detector))
        self.events = events
    }

    /// Starts the trigger thread; `say` gets each outcome there.
    func start(_ say: @escaping @Sendable (EventRecorder.Outcome) -> Void) {
        // Holds self until stop() joins it and lets the thread go.
        let worker = WorkerThread(name: "motion-events") { [self] in
            while let next = triggers.pop() {
                if stopping.load(ordering: .sequentiallyConsistent) { continue }
                say(events.trigger(.motion, frame: next.frame, motionScore: next.score))
            }
        }
        self.worker.withLock { $0 = worker }
        worker.start()
    }

    /// On the recording thread, once per frame, before it is encoded.
    func look(at buffer: PixelBuffer) {
        let trigger = looking.withLock { l -> (frame: StreamHub.PublishedFrame, score: Double)? in
            guard case .motion(let score) = l.detector.look(at: buffer) else {
                // Motion has stopped: its last frame triggers too, so the clip ends post-roll after it.
                defer { l.untriggered = nil }
                return l.untriggered
            }
            let now = buffer.presentationTimeNanoseconds
            let frame = StreamHub.PublishedFrame(sequence: buffer.sequence, presentationTimeNanoseconds: now)
            if let last = l.lastTrigger, now >= last, now - last < Self.triggerEveryNanoseconds {
                l.untriggered = (frame, score)
                return nil
            }
            l.lastTrigger = now
            l.untriggered = nil
            return (frame, score)
        }
        // Full (the thread is held up by a slow disk): this one is dropped; the next comes within half a second.
        if let trigger { _ = triggers.tryPush(trigger) }
    }

    /// After the recording (its stream has ended, so no clip can grow): triggers still queued are
    /// dropped rather than refused one by one, then the thread ends.
    func stop() {
        looking.withLock { $0.untriggered = nil }
        stopping.store(true, ordering: .sequentiallyConsistent)
        triggers.close()
        worker.withLock { $0.take() }?.join()
    }
}
