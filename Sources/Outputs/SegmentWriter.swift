import Bitstream
import Glibc
import Hub

/// A recording's stream written into files, from one thread at a time (the output's): a name pattern,
/// segments, rotation, a timestamps sidecar, retention, and the sound that belongs to each file.
///
/// Every file starts with SPS+PPS+IDR (it is cut only in front of an IDR, and the stream writer puts
/// the parameter sets there), so each plays on its own; every chunk goes to exactly one file, so no
/// frame is lost or repeated between files. Each file is finished like a single recording: fsync'd
/// and moved from its temporary name to its final one.
///
/// A file that is cut waits for the sound of its last moments, which comes after the cut (the audio
/// encoder's delay): it is finished once its sound reaches its end, at the next cut or end, or a second
/// of picture later at most.
final class SegmentWriter {
    let configuration: RecordingFileOutput.Configuration
    /// Asked at an IDR that could start a new file: whether one was requested (and forgets the request).
    private let takeRotationRequest: () -> Bool
    private let fileFinished: (FinishedFile) -> Void
    private let fileDeleted: (String) -> Void

    private var sink: FileSink?
    /// The current file's container writer; nil for raw Annex-B.
    private var container: ContainerWriter?
    private var current: FinishedFile?
    private var timestamps: TimestampsFile?
    private var timingNote: TimingNoteInserter?
    private var segmentIndex = 0
    private var firstPresentation: UInt64?
    private var segmentStartPresentation: UInt64 = 0
    /// The presentation time of the last picture written.
    private(set) var lastPresentation: UInt64 = 0
    private var nextBoundary: UInt64 = .max
    private var frameInterval: UInt64 = 0
    /// Final names of the files this run has opened.
    private var writtenThisRun = Set<String>()

    /// A file that was cut and waits for the sound of its last moments.
    private struct EndingFile {
        var sink: FileSink
        var container: ContainerWriter?
        var file: FinishedFile
        var timestamps: TimestampsFile?
        var deadline: UInt64 = .max
    }
    private var ending: EndingFile?
    /// Sound the last cut file held past its picture's end (taken at the cut, one reference each): the
    /// next file's, given to it after its first picture.
    private var soundForNextFile: [StreamChunk] = []
    /// About 10 s of AAC or Opus packets: more than the picture ever lags the sound.
    static let mostSoundForNextFile = 512

    /// - Parameter fileFinished: called each time a file is finished, on the writing thread.
    /// - Parameter fileDeleted: called with each path retention deleted.
    init(configuration: RecordingFileOutput.Configuration, takeRotationRequest: @escaping () -> Bool,
         fileFinished: @escaping (FinishedFile) -> Void, fileDeleted: @escaping (String) -> Void) {
        self.configuration = configuration
        self.takeRotationRequest = takeRotationRequest
        self.fileFinished = fileFinished
        self.fileDeleted = fileDeleted
        timingNote = configuration.timingSEICodec.map { TimingNoteInserter(codec: $0) }
    }

    /// A file is open (none between a gap and the camera's next IDR, or after the end).
    var isFileOpen: Bool { current != nil }

    /// When the cut file that waits for its sound is finished without it; nil when none waits.
    var endingDeadline: UInt64? { ending?.deadline }

    /// The current file was cut short by `failure` (it still holds every whole frame before it).
    func markFailed(_ failure: OutputError) {
        current?.error = failure
    }

    /// Sound goes into the file the picture is in, once it has one; it never opens, cuts or ends a file.
    /// True when it completed the sound of the cut file that waited for it (which is now finished).
    func writeSound(_ chunk: StreamChunk) throws -> Bool {
        var completedEnding = false
        if let container = ending?.container {
            if container.beginsBeforeVideoEnd(chunk) { try container.write(chunk) }
            if container.soundReachesVideoEnd {
                try finishEndingFile()
                completedEnding = true
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
        return completedEnding
    }

    /// The sound of a cut file's last moments did not come within a second of picture: it ends without it.
    func finishEndingFileIfOverdue(at pts: UInt64) throws {
        if let deadline = ending?.deadline, pts >= deadline { try finishEndingFile() }
    }

    /// Writes an access unit, first cutting the file in front of an IDR at a segment boundary or when a new
    /// file was requested. Returns the stream bytes written, or nil when no file takes it (after a gap,
    /// until the camera's next IDR).
    func writePicture(_ chunk: StreamChunk) throws -> Int? {
        let pts = chunk.presentationTimeNanoseconds
        // After a gap the file ended there; the camera's first IDR since opens the next one.
        if current == nil, sink == nil {
            guard chunk.isIDR else { return nil }
            // A SIGHUP during the gap asked for what this does: not another file at the next IDR.
            _ = takeRotationRequest()
            try openNextFile()
        }
        if firstPresentation == nil {
            firstPresentation = pts
            if let seconds = configuration.segmentSeconds {
                nextBoundary = pts + UInt64(seconds * 1e9)
            }
        }
        if chunk.isIDR, let file = current, file.frames > 0 {
            if takeRotationRequest() || pts >= nextBoundary {
                if let seconds = configuration.segmentSeconds {
                    let step = UInt64(seconds * 1e9)
                    while nextBoundary <= pts { nextBoundary += step }
                }
                try cutCurrentFile(nextAt: pts)
                try openNextFile()
            }
        }
        guard let sink, current != nil else { return nil }
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
                defer { releaseCarriedSound() }
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
        if chunk.isIDR { current!.idrFrames += 1 }
        timestamps?.append(presentationNanoseconds: pts)
        return written
    }

    /// Lets go of the sound kept for a next file that will not come.
    func releaseCarriedSound() {
        for carried in soundForNextFile { carried.release() }
        soundForNextFile.removeAll(keepingCapacity: true)
    }

    func openNextFile() throws {
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
                fileDeleted(deleted)
            }
        }
    }

    func finishCurrentFile() throws {
        try finishEndingFile()
        if let detached = detachCurrentFile() { try close(detached) }
    }

    func finishEndingFile() throws {
        guard let ending else { return }
        self.ending = nil
        try close(ending)
    }

    /// Ends the current file at the cut: finished now, or, when its sound has not reached its end yet,
    /// kept as the ending file (which takes the sound up to there) while the next file begins.
    func cutCurrentFile(nextAt pts: UInt64) throws {
        try finishEndingFile()
        guard var detached = detachCurrentFile() else { return }
        // The sound past this file's picture came before the next file's picture: it is the next file's.
        if configuration.takesAudio, let container = detached.container {
            for chunk in soundForNextFile { chunk.release() }
            soundForNextFile = container.takeSoundPastVideoEnd()
        }
        if configuration.takesAudio, detached.file.frames > 0, let container = detached.container, !container.soundReachesVideoEnd {
            detached.deadline = pts &+ 1_000_000_000
            ending = detached
        } else {
            try close(detached)
        }
    }

    private func detachCurrentFile() -> EndingFile? {
        guard let sink, var file = current else { return nil }
        self.sink = nil
        current = nil
        file.durationSeconds = file.frames > 0 ? Double(lastPresentation - segmentStartPresentation + frameInterval) / 1e9 : 0
        defer {
            container = nil
            timestamps = nil
        }
        return EndingFile(sink: sink, container: container, file: file, timestamps: timestamps)
    }

    private func close(_ ending: EndingFile) throws {
        var file = ending.file
        let keep = file.frames > 0
        var closeError: Error?
        if let container = ending.container {
            file.clampedTimestamps = container.clampedTimestamps
            // The trailer; a file whose trailer fails still ends on its last whole fragment.
            if keep {
                do { try container.finish() } catch { closeError = error }
            }
        }
        do {
            _ = try ending.sink.close(keep: keep)
        } catch {
            closeError = closeError ?? error
        }
        if keep, let timestamps = ending.timestamps {
            do {
                try timestamps.save()
                file.timestampsPath = timestamps.path
            } catch {
                closeError = closeError ?? error
            }
        }
        if let closeError {
            file.error = file.error ?? (closeError as? OutputError ?? OutputError(.unwritable, "\(closeError)"))
        }
        // A container's bytes are not the stream's: report the file's own size.
        var st = stat()
        if keep, file.format != .raw, stat(file.path, &st) == 0 { file.bytes = Int(st.st_size) }
        if keep { fileFinished(file) }
        if let closeError { throw closeError }
    }
}
