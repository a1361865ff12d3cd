import Bitstream
import Glibc
import Hub
import Threading
import Synchronization

/// Recording to files: a name pattern, optional segments, a timestamps sidecar, retention, and
/// rotation on demand (SIGHUP), written by a `SegmentWriter` on a thread of its own behind a
/// `.lossless` hub subscription. When the camera goes away the file ends at the gap, and the camera's
/// first IDR after it opens the next.
public final class RecordingFileOutput: StreamOutput, @unchecked Sendable {
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
    /// Given at `open`, before any thread of this output runs.
    private var onFailure: (@Sendable (OutputError) -> Void)?
    /// Called on the output's thread each time a file is finished.
    public var onFileFinished: (@Sendable (FinishedFile) -> Void)?
    /// Called with each path retention deleted.
    public var onFileDeleted: (@Sendable (String) -> Void)?

    let configuration: Configuration
    private let queueCapacity: Int
    private var subscription: Subscription?
    private var hub: StreamHub?
    private var worker: WorkerThread?
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
    }
    /// Owned by the output's thread once `open` has started it (by the caller before and after).
    private lazy var files = SegmentWriter(
        configuration: configuration,
        takeRotationRequest: { [unowned self] in
            shared.withLock { s in
                defer { s.rotateRequested = false }
                return s.rotateRequested
            }
        },
        fileFinished: { [unowned self] file in
            shared.withLock { $0.finished.append(file) }
            onFileFinished?(file)
        },
        fileDeleted: { [unowned self] path in onFileDeleted?(path) })

    public init(configuration: Configuration, queueCapacity: Int = 240) {
        self.configuration = configuration
        self.queueCapacity = max(1, queueCapacity)
    }

    public var failure: OutputError? { shared.withLock { $0.failure } }

    /// The names this output writes, and the device they are named after.
    public var namePattern: OutputNamePattern { configuration.pattern }
    public var deviceName: String { configuration.device }

    /// Every file finished so far.
    public var finishedFiles: [FinishedFile] { shared.withLock { $0.finished } }

    /// Opens the first file now, so a bad path fails before anything is recorded.
    public func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        self.onFailure = onFailure
        try files.openNextFile()
        guard let subscription = hub.subscribe(label, from: .nextIDR, policy: .lossless(depth: queueCapacity),
                                                       withAudio: configuration.takesAudio) else {
            try? files.finishCurrentFile()
            throw OutputError(.unwritable, "\(label): the recording has already ended")
        }
        self.hub = hub
        self.subscription = subscription
        let worker = WorkerThread(name: "file-out") { [unowned self] in self.run() }
        self.worker = worker
        worker.start()
    }

    /// Starts a new file at the next IDR (SIGHUP, log-rotation style).
    public func requestNewFile() {
        shared.withLock { $0.rotateRequested = true }
        // Through the gate: a rotation waits at most for the next regular IDR when one was just asked for.
        hub?.requestIDR()
    }

    /// The camera went away and every access unit before it has been published: the current file (or
    /// segment) ends after them, now, not when the camera returns; the next IDR opens the next file.
    public func endFileAtSourceGap() {
        shared.withLock { $0.endAtGap = true }
        subscription?.wake()
    }

    private func run() {
        subscription?.drain(woken: endFileIfAtGap) { chunk in
            if shared.withLock({ $0.failure != nil }) { return }
            do {
                try write(chunk)
            } catch {
                fail(error)
            }
        }
    }

    private func write(_ chunk: StreamChunk) throws {
        if chunk.kind == .audio {
            _ = try files.writeSound(chunk)
            return
        }
        try files.finishEndingFileIfOverdue(at: chunk.presentationTimeNanoseconds)
        guard let written = try files.writePicture(chunk) else { return }
        framesWritten.add(1, ordering: .relaxed)
        bytesWritten.add(written, ordering: .relaxed)
    }

    private func endFileIfAtGap() {
        guard shared.withLock({ s -> Bool in defer { s.endAtGap = false }; return s.endAtGap }),
              shared.withLock({ $0.failure == nil }), files.isFileOpen else { return }
        do {
            // The file takes the sound of its last moments, which comes after them, as at a cut.
            try files.cutCurrentFile(nextAt: files.lastPresentation)
        } catch {
            fail(error)
        }
    }

    private func fail(_ error: Error) {
        let failure = error as? OutputError ?? OutputError(.unwritable, "\(label): \(error)")
        shared.withLock { $0.failure = failure }
        files.markFailed(failure)
        onFailure?(failure)
    }

    public var counters: OutputCounters {
        var counters = OutputCounters()
        counters.frames = framesWritten.load(ordering: .relaxed)
        counters.bytes = bytesWritten.load(ordering: .relaxed)
        return counters
    }

    public func finish() -> OutputReport {
        worker?.join()
        worker = nil
        var finalError: OutputError?
        do { try files.finishCurrentFile() } catch { finalError = error as? OutputError ?? OutputError(.unwritable, "\(error)") }
        files.releaseCarriedSound()
        let finished = shared.withLock { $0.finished }
        var report = OutputReport(kind: kind, label: label, path: finished.last?.path)
        report.frames = finished.reduce(0) { $0 + $1.frames }
        report.bytes = finished.reduce(0) { $0 + $1.bytes }
        report.idrFrames = finished.reduce(0) { $0 + $1.idrFrames }
        report.error = shared.withLock { $0.failure } ?? finalError
        return report
    }
}
