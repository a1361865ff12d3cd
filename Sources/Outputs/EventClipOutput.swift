import Hub
import Threading
import Synchronization

/// One event clip of an `EventRecorder`: the stream from an IDR in the hub's ring (the pre-roll) to
/// the access unit presented at its end, which a later trigger may move on, written by a
/// `SegmentWriter` on a thread of its own behind a `.lossless` subscription. Segments
/// (`segmentSeconds`) cut a long clip into files that continue seamlessly.
///
/// Past its end the clip's picture is complete; its sound comes a little later, and the clip waits for
/// it as a cut file does (a second at most), then leaves the hub so the recording never waits for it.
/// A clip that cannot be written, or whose camera goes away, ends at once; the recording goes on.
final class EventClipOutput: Sendable {
    let label: String
    private let queueCapacity: Int
    private let end: ClipEnd
    private let takesAudio: Bool
    private let onFailure: @Sendable (OutputError) -> Void
    private let onClipEnded: @Sendable (EventClipOutput) -> Void
    /// Set by `open`; read by `endAtSourceGap` from the trigger's thread and by `finish`.
    private let running = Mutex((subscription: Subscription?.none, worker: WorkerThread?.none))
    private let shared = Mutex((failure: OutputError?.none, endAtGap: false))
    /// Stream bytes and access units handed to files so far (a container's own bytes are not counted).
    private let framesWritten = Atomic<Int>(0)
    private let bytesWritten = Atomic<Int>(0)
    /// The clip's files until `open` takes them and gives them to the clip's thread, whose alone they
    /// are from then on (so no lock per frame); it finishes them before it ends.
    private let unopenedFiles: Mutex<SegmentWriter?>

    /// - Parameter endingAfter: the presentation time of the clip's last access unit, for now.
    /// - Parameter onFileFinished: called on the clip's thread with each file finished.
    /// - Parameter onFileDeleted: called with each path retention deleted.
    /// - Parameter onClipEnded: called on the clip's thread once its last file is finished (or the
    ///   recording ended first).
    init(configuration: RecordingFileOutput.Configuration, endingAfter: UInt64, queueCapacity: Int = 240,
         onFileFinished: @escaping @Sendable (FinishedFile) -> Void, onFileDeleted: @escaping @Sendable (String) -> Void,
         onFailure: @escaping @Sendable (OutputError) -> Void, onClipEnded: @escaping @Sendable (EventClipOutput) -> Void) {
        label = configuration.pattern.template
        self.queueCapacity = max(1, queueCapacity)
        end = ClipEnd(after: endingAfter)
        takesAudio = configuration.takesAudio
        self.onFailure = onFailure
        self.onClipEnded = onClipEnded
        // A clip is never rotated: its files are cut at segment boundaries only.
        unopenedFiles = Mutex(SegmentWriter(configuration: configuration, takeRotationRequest: { false },
                                          fileFinished: onFileFinished, fileDeleted: onFileDeleted))
    }

    /// The first file opens now; the stream starts at `start` in the hub's ring.
    func open(hub: StreamHub, from start: Subscription.Start) throws {
        guard let files = unopenedFiles.withLock({ $0.take() }) else { throw OutputError(.unwritable, "\(label): opened twice") }
        try files.openNextFile()
        guard let subscription = hub.subscribe(label, from: start, policy: .lossless(depth: queueCapacity),
                                               withAudio: takesAudio) else {
            try? files.finishCurrentFile()
            throw OutputError(.unwritable, "\(label): the recording has already ended")
        }
        // From here the files are the clip thread's alone.
        let worker = WorkerThread(name: "event-clip") { [unowned self] in
            run(subscription, files)
            // The recording ended during the clip: its file is finished here, before the event ends.
            do {
                try files.finishCurrentFile()
            } catch {
                fail(error, files)
            }
            files.releaseCarriedSound()
            onClipEnded(self)
        }
        running.withLock { $0 = (subscription, worker) }
        worker.start()
    }

    /// Moves the clip's end to after the access unit presented at `time` (a later trigger); false
    /// when the clip has already ended (the caller starts a new one).
    func extend(endingAfter time: UInt64) -> Bool {
        end.extend(after: time)
    }

    /// The camera went away: the clip ends after the last access unit before the gap.
    func endAtSourceGap() {
        shared.withLock { $0.endAtGap = true }
        running.withLock { $0.subscription }?.wake()
    }

    /// On the clip's thread, which owns `files` while it runs.
    private func run(_ subscription: Subscription, _ files: SegmentWriter) {
        /// The clip's last picture is written; its sound may still be on the way.
        var pictureEnded = false
        subscription.drain(woken: { self.endIfAtGap(subscription, files) }) { chunk in
            if shared.withLock({ $0.failure != nil }) { return }
            do {
                try write(chunk, subscription, files, pictureEnded: &pictureEnded)
            } catch {
                fail(error, files)
                // A clip that cannot be written ends; the recording it came from goes on.
                end.endNow()
                subscription.cancel()
            }
        }
    }

    private func write(_ chunk: StreamChunk, _ subscription: Subscription, _ files: SegmentWriter, pictureEnded: inout Bool) throws {
        if chunk.kind == .audio {
            if try files.writeSound(chunk), pictureEnded { try endClip(subscription, files) }
            return
        }
        let pts = chunk.presentationTimeNanoseconds
        try files.finishEndingFileIfOverdue(at: pts)
        if end.isOver(at: pts) {
            if !pictureEnded {
                pictureEnded = true
                try files.cutCurrentFile(nextAt: pts)
            }
            if files.endingDeadline.map({ pts >= $0 }) ?? true { try endClip(subscription, files) }
            return
        }
        guard let written = try files.writePicture(chunk) else { return }
        framesWritten.add(1, ordering: .relaxed)
        bytesWritten.add(written, ordering: .relaxed)
    }

    /// The clip is complete, sound and all: its file is finished and it leaves the hub.
    private func endClip(_ subscription: Subscription, _ files: SegmentWriter) throws {
        subscription.cancel()
        try files.finishCurrentFile()
    }

    /// A clip ends at the gap: the camera that returns is a new event's.
    private func endIfAtGap(_ subscription: Subscription, _ files: SegmentWriter) {
        guard shared.withLock({ s -> Bool in defer { s.endAtGap = false }; return s.endAtGap }),
              shared.withLock({ $0.failure == nil }), files.isFileOpen else { return }
        end.endNow()
        subscription.cancel()
        do {
            try files.finishCurrentFile()
        } catch {
            fail(error, files)
        }
    }

    private func fail(_ error: Error, _ files: SegmentWriter) {
        let failure = error as? OutputError ?? OutputError(.unwritable, "\(label): \(error)")
        shared.withLock { $0.failure = $0.failure ?? failure }
        files.markFailed(failure)
        onFailure(failure)
    }

    var counters: OutputCounters {
        var counters = OutputCounters()
        counters.frames = framesWritten.load(ordering: .relaxed)
        counters.bytes = bytesWritten.load(ordering: .relaxed)
        return counters
    }

    /// Waits for the clip's thread (after the clip has ended, or the hub has closed), which has settled its files.
    func finish() {
        running.withLock { $0.worker.take() }?.join()
    }
}
