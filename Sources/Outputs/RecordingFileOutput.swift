import Bitstream
import Glibc
import Hub
import Threading
import Synchronization

/// Recording to files: a name pattern, optional segments, a timestamps sidecar, retention, and
/// rotation on demand (SIGHUP), written by a `SegmentWriter` on a thread of its own behind a
/// `.lossless` hub subscription. When the camera goes away the file ends at the gap, and the camera's
/// first IDR after it opens the next.
public final class RecordingFileOutput: StreamOutput, Sendable {
    public struct Configuration: Sendable {
        public var pattern: OutputNamePattern
        /// The source's stable name, for `{device}`.
        public var device: String
        public var overwrite: Bool
        /// Start a new file at the first IDR after every this many seconds.
        public var segmentSeconds: Double?
        public var saveTimestamps: Bool
        public var retention: RetentionPolicy
        /// The container of every file; anything but raw needs `makeContainer`.
        public var format: ContainerFormat
        public var makeContainer: ContainerWriterFactory?
        /// Raw files only: camrec's timing note at the head of every access unit, as an SEI of this
        /// codec (`--timing-sei`); nil for a bare stream.
        public var timingSEICodec: VideoCodec?
        /// Where `{n}` comes from when files of several outputs share one count (event clips).
        public var numbering: FileNumbering?
        /// The container writers carry the recording's sound: the subscription takes audio packets.
        public var takesAudio = false

        public init(pattern: OutputNamePattern, device: String, overwrite: Bool, segmentSeconds: Double? = nil,
                    saveTimestamps: Bool = false, retention: RetentionPolicy = RetentionPolicy(),
                    format: ContainerFormat = .raw, makeContainer: ContainerWriterFactory? = nil, timingSEICodec: VideoCodec? = nil) {
            precondition(format == .raw || makeContainer != nil, "a container needs its writer")
            self.timingSEICodec = format == .raw ? timingSEICodec : nil
            self.format = format
            self.makeContainer = makeContainer
            self.pattern = pattern
            self.device = device
            self.overwrite = overwrite
            self.segmentSeconds = segmentSeconds
            self.saveTimestamps = saveTimestamps
            self.retention = retention
        }
    }

    public var kind: OutputKind { .file }
    public var label: String { configuration.pattern.template }
    /// Called on the output's thread each time a file is finished; set before `open`.
    public var onFileFinished: (@Sendable (FinishedFile) -> Void)? {
        get { shared.withLock { $0.onFileFinished } }
        set { shared.withLock { $0.onFileFinished = newValue } }
    }
    /// Called with each path retention deleted; set before `open`.
    public var onFileDeleted: (@Sendable (String) -> Void)? {
        get { shared.withLock { $0.onFileDeleted } }
        set { shared.withLock { $0.onFileDeleted = newValue } }
    }

    let configuration: Configuration
    private let queueCapacity: Int
    /// Set by `open`; read by the signal and camera threads (`requestNewFile`, `endFileAtSourceGap`) and by `finish`.
    private let running = Mutex((hub: StreamHub?.none, subscription: Subscription?.none, worker: WorkerThread?.none))
    private let shared = Mutex(Shared())
    /// Stream bytes and access units handed to files so far (a container's own bytes are not counted).
    private let framesWritten = Atomic<Int>(0)
    private let bytesWritten = Atomic<Int>(0)
    private struct Shared {
        var failure: OutputError?
        var rotateRequested = false
        /// The camera went away: end the file once everything before the gap is written.
        var endAtGap = false
        var finished: [FinishedFile] = []
        /// Finishing the last file failed (at the end of the stream).
        var finalError: OutputError?
        /// Given at `open`, before any thread of this output runs.
        var onFailure: (@Sendable (OutputError) -> Void)?
        var onFileFinished: (@Sendable (FinishedFile) -> Void)?
        var onFileDeleted: (@Sendable (String) -> Void)?
    }
    /// The files until `open` takes them and gives them to the output's thread, whose alone they are
    /// from then on (so no lock per frame); it finishes them before it ends.
    private let unopenedFiles = Mutex<SegmentWriter?>(nil)

    public init(configuration: Configuration, queueCapacity: Int = 240) {
        self.configuration = configuration
        self.queueCapacity = max(1, queueCapacity)
        unopenedFiles.withLock {
            $0 = SegmentWriter(
                configuration: configuration,
                takeRotationRequest: { [unowned self] in
                    shared.withLock { s in
                        defer { s.rotateRequested = false }
                        return s.rotateRequested
                    }
                },
                fileFinished: { [unowned self] file in
                    let told = shared.withLock { s in
                        s.finished.append(file)
                        return s.onFileFinished
                    }
                    told?(file)
                },
                fileDeleted: { [unowned self] path in shared.withLock { $0.onFileDeleted }?(path) })
        }
    }

    public var failure: OutputError? { shared.withLock { $0.failure } }

    /// The names this output writes, and the device they are named after.
    public var namePattern: OutputNamePattern { configuration.pattern }
    public var deviceName: String { configuration.device }

    /// Every file finished so far.
    public var finishedFiles: [FinishedFile] { shared.withLock { $0.finished } }

    /// Opens the first file now, so a bad path fails before anything is recorded.
    public func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        shared.withLock { $0.onFailure = onFailure }
        guard let files = unopenedFiles.withLock({ $0.take() }) else { throw OutputError(.unwritable, "\(label): opened twice") }
        try files.openNextFile()
        guard let subscription = hub.subscribe(label, from: .nextIDR, policy: .lossless(depth: queueCapacity),
                                                       withAudio: configuration.takesAudio) else {
            try? files.finishCurrentFile()
            throw OutputError(.unwritable, "\(label): the recording has already ended")
        }
        // From here the files are the output thread's alone; it finishes the last when the stream ends.
        let worker = WorkerThread(name: "file-out") { [unowned self] in
            run(subscription, files)
            do {
                try files.finishCurrentFile()
            } catch {
                shared.withLock { $0.finalError = error as? OutputError ?? OutputError(.unwritable, "\(error)") }
            }
            files.releaseCarriedSound()
        }
        running.withLock { $0 = (hub, subscription, worker) }
        worker.start()
    }

    /// Starts a new file at the next IDR (SIGHUP, log-rotation style).
    public func requestNewFile() {
        shared.withLock { $0.rotateRequested = true }
        // Through the gate: a rotation waits at most for the next regular IDR when one was just asked for.
        running.withLock { $0.hub }?.requestIDR()
    }

    /// The camera went away and every access unit before it has been published: the current file (or
    /// segment) ends after them, now, not when the camera returns; the next IDR opens the next file.
    public func endFileAtSourceGap() {
        shared.withLock { $0.endAtGap = true }
        running.withLock { $0.subscription }?.wake()
    }

    /// On the output's thread, which owns `files` while it runs.
    private func run(_ subscription: Subscription, _ files: SegmentWriter) {
        subscription.drain(woken: { self.endFileIfAtGap(files) }) { chunk in
            if shared.withLock({ $0.failure != nil }) { return }
            do {
                try write(chunk, files)
            } catch {
                fail(error, files)
            }
        }
    }

    private func write(_ chunk: StreamChunk, _ files: SegmentWriter) throws {
        if chunk.kind == .audio {
            _ = try files.writeSound(chunk)
            return
        }
        try files.finishEndingFileIfOverdue(at: chunk.presentationTimeNanoseconds)
        guard let written = try files.writePicture(chunk) else { return }
        framesWritten.add(1, ordering: .relaxed)
        bytesWritten.add(written, ordering: .relaxed)
    }

    private func endFileIfAtGap(_ files: SegmentWriter) {
        guard shared.withLock({ s -> Bool in defer { s.endAtGap = false }; return s.endAtGap }),
              shared.withLock({ $0.failure == nil }), files.isFileOpen else { return }
        do {
            // The file takes the sound of its last moments, which comes after them, as at a cut.
            try files.cutCurrentFile(nextAt: files.lastPresentation)
        } catch {
            fail(error, files)
        }
    }

    private func fail(_ error: Error, _ files: SegmentWriter) {
        let failure = error as? OutputError ?? OutputError(.unwritable, "\(label): \(error)")
        let told = shared.withLock { s in
            s.failure = failure
            return s.onFailure
        }
        files.markFailed(failure)
        told?(failure)
    }

    public var counters: OutputCounters {
        var counters = OutputCounters()
        counters.frames = framesWritten.load(ordering: .relaxed)
        counters.bytes = bytesWritten.load(ordering: .relaxed)
        return counters
    }

    public func finish() -> OutputReport {
        running.withLock { $0.worker.take() }?.join()
        let finalError = shared.withLock { $0.finalError }
        let finished = shared.withLock { $0.finished }
        var report = OutputReport(kind: kind, label: label, path: finished.last?.path)
        report.frames = finished.reduce(0) { $0 + $1.frames }
        report.bytes = finished.reduce(0) { $0 + $1.bytes }
        report.idrFrames = finished.reduce(0) { $0 + $1.idrFrames }
        report.error = shared.withLock { $0.failure } ?? finalError
        return report
    }
}
