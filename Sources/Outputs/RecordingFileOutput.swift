import Bitstream
import Glibc
import Hub
import Pipeline
import Synchronization

/// Recording to files: a name pattern, optional segments, a timestamps sidecar, retention, and
/// rotation on demand (SIGHUP), on a thread of its own behind a `.lossless` hub subscription.
///
/// Every file starts with SPS+PPS+IDR (it is cut only in front of an IDR, and the stream writer puts
/// the parameter sets there), so each plays on its own; every chunk goes to exactly one file, so no
/// frame is lost or repeated between files. Each file is finished like a single recording: fsync'd
/// and moved from its temporary name to its final one.
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
    let shared = Mutex(Shared())
    /// Stream bytes and access units handed to files so far (a container's own bytes are not counted).
    private let framesWritten = Atomic<Int>(0)
    private let bytesWritten = Atomic<Int>(0)
    struct Shared {
        var failure: OutputError?
        var rotateRequested = false
        /// The camera went away: end the file once everything before the gap is written.
        var endAtGap = false
        var finished: [FinishedFile] = []
    }
    /// An event clip's end (`openClip`); nil for a recording.
    private var clipEnd: ClipEnd?
    /// The clip's last frame is written; its sound may still be on the way (`ending`).
    private var clipPictureEnded = false

    // Owned by the output thread once open() returns.
    var sink: FileSink?
    /// The current file's container writer; nil for raw Annex-B.
    var container: ContainerWriter?
    var current: FinishedFile?
    var timestamps: TimestampsFile?
    private var timingNote: TimingNoteInserter?
    private var segmentIndex = 0
    private var firstPresentation: UInt64?
    var segmentStartPresentation: UInt64 = 0
    var lastPresentation: UInt64 = 0
    private var nextBoundary: UInt64 = .max
    var frameInterval: UInt64 = 0

    public init(configuration: Configuration, queueCapacity: Int = 240) {
        self.configuration = configuration
        self.queueCapacity = max(1, queueCapacity)
        timingNote = configuration.timingSEICodec.map { TimingNoteInserter(codec: $0) }
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
        try openNextFile()
        guard let subscription = hub.subscribe(label, from: .nextIDR, policy: .lossless(depth: queueCapacity),
                                                       withAudio: configuration.takesAudio) else {
            try? finishCurrentFile()
            throw OutputError(.unwritable, "\(label): the recording has already ended")
        }
        self.hub = hub
        self.subscription = subscription
        let worker = WorkerThread(name: "file-out") { [unowned self] in self.run() }
        self.worker = worker
        worker.start()
    }

    /// An event clip: the first file opens now; the stream starts at `start` in the hub's ring (the
    /// pre-roll) and ends after the access unit presented at `endingAfter`, unless `extendClip` moves
    /// that on first. Segments (`segmentSeconds`) cut a long clip into files that continue seamlessly.
    /// `onClipEnded` hears when the last file is finished (or the recording ended first).
    public func openClip(hub: StreamHub, from start: Subscription.Start, endingAfter: UInt64,
                         onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        self.onFailure = onFailure
        try openNextFile()
        guard let subscription = hub.subscribe(label, from: start, policy: .lossless(depth: queueCapacity),
                                                       withAudio: configuration.takesAudio) else {
            try? finishCurrentFile()
            throw OutputError(.unwritable, "\(label): the recording has already ended")
        }
        clipEnd = ClipEnd(after: endingAfter)
        self.hub = hub
        self.subscription = subscription
        let worker = WorkerThread(name: "event-clip") { [unowned self] in
            self.run()
            // The recording ended during the clip: its file is finished here, before the event ends.
            do {
                try self.finishCurrentFile()
            } catch {
                let failure = error as? OutputError ?? OutputError(.unwritable, "\(self.label): \(error)")
                self.shared.withLock { $0.failure = $0.failure ?? failure }
                self.onFailure?(failure)
            }
            self.onClipEnded?()
        }
        self.worker = worker
        worker.start()
    }

    /// Called on the clip's thread once it has ended.
    public var onClipEnded: (@Sendable () -> Void)?

    /// Moves the clip's end to after the access unit presented at `time` (a later trigger); false
    /// when the clip has already ended (the caller starts a new one).
    public func extendClip(endingAfter time: UInt64) -> Bool {
        clipEnd?.extend(after: time) ?? false
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
        while let subscription {
            let chunk: StreamChunk
            switch subscription.nextUnlessWoken() {
            case .chunk(let next): chunk = next
            case .timedOut:
                endFileIfAtGap()
                continue
            case .ended: return
            }
            defer { chunk.release() }
            if shared.withLock({ $0.failure != nil }) { continue }
            do {
                try write(chunk)
            } catch {
                let failure = error as? OutputError ?? OutputError(.unwritable, "\(label): \(error)")
                shared.withLock { $0.failure = failure }
                current?.error = failure
                onFailure?(failure)
                // A clip that cannot be written ends; the recording it came from goes on.
                if let clipEnd {
                    clipEnd.endNow()
                    subscription.cancel()
                }
            }
        }
    }

    /// The clip is complete, sound and all: its file is finished and it leaves the hub.
    private func endClip() throws {
        subscription?.cancel()
        try finishCurrentFile()
    }

    private func endFileIfAtGap() {
        guard shared.withLock({ s -> Bool in defer { s.endAtGap = false }; return s.endAtGap }),
              shared.withLock({ $0.failure == nil }), current != nil else { return }
        // A clip ends at the gap: the camera that returns is a new event's.
        if let clipEnd {
            clipEnd.endNow()
            subscription?.cancel()
        }
        do {
            // A recording's file takes the sound of its last moments, which comes after them, as at a cut.
            if clipEnd == nil { try cutCurrentFile(nextAt: lastPresentation) } else { try finishCurrentFile() }
        } catch {
            let failure = error as? OutputError ?? OutputError(.unwritable, "\(label): \(error)")
            shared.withLock { $0.failure = failure }
            onFailure?(failure)
        }
    }

    private func write(_ chunk: StreamChunk) throws {
        // Sound goes into the file the picture is in, once it has one; it never opens, cuts or ends a file.
        if chunk.kind == .audio {
            if let container = ending?.container {
                if container.beginsBeforeVideoEnd(chunk) { try container.write(chunk) }
                if container.soundReachesVideoEnd {
                    try finishEndingFile()
                    if clipPictureEnded { try endClip() }
                }
            }
            if let container, let file = current, file.frames > 0 {
                try container.write(chunk)
            } else if current == nil, configuration.takesAudio {
                // No file open (the camera is away): the sound may be the next file's first moments,
                // when its picture comes late; what comes before that picture is dropped there.
                if soundForNextFile.count >= Self.mostSoundForNextFile { soundForNextFile.removeFirst().release() }
                chunk.retain()
                soundForNextFile.append(chunk)
            }
            return
        }
        // The sound of a cut file's last moments did not come within a second: it ends without it.
        if let deadline = ending?.deadline, chunk.presentationTimeNanoseconds >= deadline { try finishEndingFile() }
        let pts = chunk.presentationTimeNanoseconds
        if let clipEnd, clipEnd.isOver(at: pts) {
            // Past the post-roll: the clip's picture is complete. Its sound comes a little later: the
            // file waits for it as a cut file does (a second at most), then the clip leaves the hub
            // so it never waits for us.
            if !clipPictureEnded {
                clipPictureEnded = true
                try cutCurrentFile(nextAt: pts)
            }
            if ending == nil || pts >= ending!.deadline { try endClip() }
            return
        }
        // After a gap the file ended there; the camera's first IDR since opens the next one.
        if current == nil, sink == nil {
            guard chunk.isIDR else { return }
            // A SIGHUP during the gap asked for what this does: not another file at the next IDR.
            shared.withLock { $0.rotateRequested = false }
            try openNextFile()
        }
        if firstPresentation == nil {
            firstPresentation = pts
            if let seconds = configuration.segmentSeconds {
                nextBoundary = pts + UInt64(seconds * 1e9)
            }
        }
        if chunk.isIDR, let file = current, file.frames > 0 {
            let rotate = shared.withLock { s -> Bool in
                defer { s.rotateRequested = false }
                return s.rotateRequested
            }
            if rotate || pts >= nextBoundary {
                if let seconds = configuration.segmentSeconds {
                    let step = UInt64(seconds * 1e9)
                    while nextBoundary <= pts { nextBoundary += step }
                }
                try cutCurrentFile(nextAt: pts)
                try openNextFile()
            }
        }
        guard let sink, current != nil else { return }
        if current!.frames == 0 {
            segmentStartPresentation = pts
            current!.firstFrame = chunk.sequence
            current!.firstPresentationNanoseconds = pts
        }
        current!.lastFrame = chunk.sequence
        var written = chunk.bytes.count
        if let container {
            try container.write(chunk)
            if current!.frames == 0, !soundForNextFile.isEmpty {
                defer {
                    for carried in soundForNextFile { carried.release() }
                    soundForNextFile.removeAll(keepingCapacity: true)
                }
                for carried in soundForNextFile { try container.write(carried) }
            }
        } else {
            written = try sink.write(chunk, timingNote: &timingNote)
            sink.commitBoundary()
        }
        if current!.frames > 0, pts > lastPresentation { frameInterval = pts - lastPresentation }
        lastPresentation = pts
        current!.frames += 1
        current!.bytes += written
        framesWritten.add(1, ordering: .relaxed)
        bytesWritten.add(written, ordering: .relaxed)
        if chunk.isIDR { current!.idrFrames += 1 }
        timestamps?.append(presentationNanoseconds: pts)
    }

    /// Final names of the files this run has opened.
    private var writtenThisRun = Set<String>()

    private func openNextFile() throws {
        segmentIndex += 1
        let pattern = configuration.pattern
        // An event clip's {n} counts files over every clip of the run.
        let number = configuration.numbering?.next() ?? segmentIndex
        let rendered = pattern.render(time: time(nil), segment: number, device: configuration.device)
        var path = rendered
        var attempt = 1
        // A file this run wrote is never replaced, --overwrite or not: a fixed name rotated by
        // SIGHUP continues as NAME-2, NAME-3, …
        while writtenThisRun.contains(path) {
            attempt += 1
            path = OutputNamePattern.alternative(to: rendered, attempt: attempt)
        }
        while true {
            let candidate = FileSink(path: path, overwrite: configuration.overwrite)
            do {
                try candidate.open()
                sink = candidate
                break
            } catch let error as OutputError where error.kind == .exists && (pattern.hasPlaceholders || segmentIndex > 1) {
                // A generated name clashes (two runs in one second): never overwrite, pick name-2, name-3…
                repeat {
                    attempt += 1
                    guard attempt < 1000 else { throw error }
                    path = OutputNamePattern.alternative(to: pattern.render(time: time(nil), segment: number,
                                                                            device: configuration.device), attempt: attempt)
                } while writtenThisRun.contains(path)
            }
        }
        writtenThisRun.insert(path)
        if configuration.format != .raw, let make = configuration.makeContainer, let sink {
            do {
                container = try make(configuration.format, sink)
            } catch {
                _ = try? sink.close(keep: false)
                self.sink = nil
                throw error
            }
        }
        current = FinishedFile(path: path, frames: 0, idrFrames: 0, bytes: 0, durationSeconds: 0,
                               format: configuration.format)
        timestamps = configuration.saveTimestamps ? TimestampsFile(forVideo: path) : nil
        if configuration.retention.isActive {
            for deleted in configuration.retention.apply(pattern: pattern, device: configuration.device, current: path) {
                onFileDeleted?(deleted)
            }
        }
    }

    /// A file that was cut and waits for the sound of its last moments, which comes after the cut
    /// (the audio encoder's delay): finished once its sound reaches its end, at the next cut or end, or a
    /// second of picture later at most.
    struct EndingFile {
        var sink: FileSink
        var container: ContainerWriter?
        var file: FinishedFile
        var timestamps: TimestampsFile?
        var deadline: UInt64 = .max
    }
    var ending: EndingFile?
    /// Sound the last cut file held past its picture's end (taken at the cut, one reference each): the
    /// next file's, given to it after its first picture.
    var soundForNextFile: [StreamChunk] = []
    /// About 10 s of AAC or Opus packets: more than the picture ever lags the sound.
    static let mostSoundForNextFile = 512

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
        do { try finishCurrentFile() } catch { finalError = error as? OutputError ?? OutputError(.unwritable, "\(error)") }
        for carried in soundForNextFile { carried.release() }
        soundForNextFile = []
        let files = shared.withLock { $0.finished }
        var report = OutputReport(kind: kind, label: label, path: files.last?.path)
        report.frames = files.reduce(0) { $0 + $1.frames }
        report.bytes = files.reduce(0) { $0 + $1.bytes }
        report.idrFrames = files.reduce(0) { $0 + $1.idrFrames }
        report.error = shared.withLock { $0.failure } ?? finalError
        return report
    }
}
