import Glibc

/// How a recording file ends: finished at once, or, cut while its sound is still on the way, kept open
/// as the ending file until the sound reaches its end.
extension RecordingFileOutput {
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

    func detachCurrentFile() -> EndingFile? {
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

    func close(_ ending: EndingFile) throws {
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
        if keep {
            shared.withLock { $0.finished.append(file) }
            onFileFinished?(file)
        }
        if let closeError { throw closeError }
    }
}
