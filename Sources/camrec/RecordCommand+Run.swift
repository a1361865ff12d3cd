import Audio
import Capture
import Encoder
import Glibc
import HTTPServer
import Logging
import Outputs
import Threading
import Recorder
import Synchronization
import SystemSupport

/// A `RecordingPlan` run as camrec's process: what stderr says as it happens (finished files, events,
/// motion, the camera's losses, the status line), the signals, the HTTP server, and the summary at the end.
extension RecordCommand {
    /// Runs `plan` to its end; throws the `ReportedFailure` of its exit status when it failed or was
    /// interrupted twice.
    func record(_ plan: RecordingPlan, logger: Logger) async throws {
        // On a terminal the status line is being redrawn: clear it before a line of its own.
        let clearStatus = StatusLine.stderrIsTerminal && logLevel <= .notice ? "\r\u{1B}[2K" : ""
        let camera = CameraPresence()
        // What the recording tells, gathered here and given to it when it runs.
        var hooks = Recorder.Hooks()
        prepareForCameraLoss(plan, presence: camera, clearStatus: clearStatus, hooks: &hooks)
        prepareEvents(plan.events, clearStatus: clearStatus)
        sayWhenTheEncoderFallsBehind(plan, clearStatus: clearStatus, hooks: &hooks)
        let motion = try watchMotion(plan, clearStatus: clearStatus, hooks: &hooks)
        let httpServer: LiveHTTPServer?
        if let live = plan.liveView {
            httpServer = try makeHTTPServer(plan, live: live, camera: camera, clearStatus: clearStatus, hooks: &hooks)
        } else {
            httpServer = nil
        }
        for output in plan.fileOutputs {
            output.onFileFinished = { [weak recorder = plan.recorder] file in
                let progress = recorder?.progress
                printLine(clearStatus + finishedFileLine(file, dropped: progress?.dropped ?? 0, errored: progress?.errored ?? 0))
            }
            output.onFileDeleted = { [logger] path in logger.notice("retention: deleted \(path)") }
        }
        let signals = signalService(plan, clearStatus: clearStatus)
        let status = StatusLine.stderrIsTerminal && logLevel <= .notice
            ? StatusLine(sample: { [recorder = plan.recorder] in (recorder.progress.frames, recorder.progress.bytes) }) { [recorder = plan.recorder] rates in
                "frames \(recorder.progress.frames)  \(rates.framesPerSecond.decimalText(places: 1)) fps  \(rates.megabitsPerSecond.decimalText(places: 1)) Mbit/s  "
                    + "dropped \(recorder.progress.dropped)  \(rates.elapsedSeconds.decimalText(places: 1)) s"
            }
            : nil
        status?.start()
        let httpRefused = Mutex<String?>(nil)
        let recording = recordingService(plan, hooks: hooks, httpServer: httpServer, motion: motion, clearStatus: clearStatus,
                                         refused: { reason in httpRefused.withLock { $0 = reason } })
        // The live view stops after the recording (its page shows the end), the signals last.
        await runServiceGroup(signals: signals, services: (httpServer.map { [$0] } ?? []) + [recording])
        let result = recording.finishedOutcome
        status?.stop()
        if let refused = httpRefused.withLock({ $0 }) {
            printError(refused)
            throw ReportedFailure(status: .outputError)
        }
        for line in summaryLines(result) { printLine(line) }
        if let report = plan.sound?.report { printLine("camrec: \(report)") }
        let lead = AudioCapture.threadPriorityLead
        switch plan.sound?.threadPriority {
        case .raised(let nice)?: logger.debug("the sound's thread ran at nice \(nice), \(lead) ahead of the rest of camrec")
        case .refused?: logger.debug("the sound's thread ran at the process's priority: \(lead) ahead needs CAP_SYS_NICE or systemd's LimitNICE=")
        case nil: break
        }
        // A raw input whose length is not a whole number of frames usually has the wrong --size or format.
        if let raw = plan.source as? RawFrameSource, raw.trailingBytes > 0 {
            printLine("camrec: warning: the input ended \(raw.trailingBytes) bytes into a frame of \(raw.frameBytes); those bytes "
                + "are not in the recording (check --size and --input-format if the input should hold whole frames)")
        }
        if let failure = result.failure {
            throw report(failure)
        }
        if SignalService.interrupts > 1 { throw ReportedFailure(status: .interrupted) }
    }

    /// Frames dropped for want of encoder time are said as they happen, not only counted in `dropped=`.
    private func sayWhenTheEncoderFallsBehind(_ plan: RecordingPlan, clearStatus: String, hooks: inout Recorder.Hooks) {
        let (videoEncoder, source) = (plan.videoEncoder, plan.source)
        let behind = EncoderBehindWarning(encoder: videoEncoder.name, oneX264Thread: videoEncoder.isX264 && threads == 1 && slices == 1,
                                          threads: threads, preset: videoEncoder.isVAAPI ? nil : preset, size: source.frameSize, framesPerSecond: source.framesPerSecond)
        hooks.onEncoderBehind = { dropped in printLine(clearStatus + behind.line(droppedSoFar: dropped)) }
    }

    /// `--motion`: the watcher started, looking at every frame before it is encoded; nil without it.
    private func watchMotion(_ plan: RecordingPlan, clearStatus: String, hooks: inout Recorder.Hooks) throws -> MotionWatcher? {
        guard let motion = try events.makeMotionWatcher(events: plan.events, size: plan.source.frameSize) else { return nil }
        motion.start { outcome in
            if let line = Self.describe(outcome, via: .motion) { printLine(clearStatus + "camrec: " + line) }
        }
        hooks.onFrameBeforeEncoding = { buffer in motion.look(at: buffer) }
        return motion
    }

    /// `--http`: the server with the page's actions (an IDR, new files, an event) and, with event clips,
    /// each event's first picture as its thumbnail.
    private func makeHTTPServer(_ plan: RecordingPlan, live: LiveViewOutput, camera: CameraPresence,
                                clearStatus: String, hooks: inout Recorder.Hooks) throws -> LiveHTTPServer {
        let eventClips = plan.events
        let thumbnails = eventClips != nil ? EventThumbnails(hevc: defaultCodec == .hevc) : nil
        if let thumbnails {
            eventClips?.onEventStarted = { event, picture in
                if let picture { thumbnails.make(eventID: event.id, accessUnit: picture.accessUnit) }
            }
        }
        var httpTrigger: (@Sendable (String?) -> EventRecorder.Outcome)?
        if let eventClips {
            httpTrigger = { label in
                let outcome = eventClips.trigger(.http, label: label)
                if let line = Self.describe(outcome, via: .http) { printLine(clearStatus + "camrec: " + line) }
                return outcome
            }
        }
        let (keyframes, rotatingFiles) = (plan.keyframes, plan.fileOutputs)
        let actions = LiveActions(keyframe: { keyframes.request() },
                                  rotate: { rotatingFiles.forEach { $0.requestNewFile() }; return rotatingFiles.count },
                                  event: httpTrigger, events: { eventClips?.events ?? [] }, thumbnails: thumbnails)
        return try makeHTTPServer(live: live, recorder: plan.recorder, source: plan.source,
                                  encoderName: plan.encoderNames[defaultCodec] ?? plan.videoEncoder.name, actions: actions,
                                  fileOutputs: plan.fileOutputs, outputs: plan.outputs, camera: camera,
                                  webRTCSound: plan.webRTCSound, hooks: &hooks)
    }

    /// SIGINT and SIGTERM end cleanly: the group's shutdown stops the recording first. SIGHUP starts new
    /// files, log-rotation style; SIGUSR1 starts or extends an event.
    private func signalService(_ plan: RecordingPlan, clearStatus: String) -> SignalService {
        let (outputSet, recorder, fileOutputs, eventClips) = (plan.outputSet, plan.recorder, plan.fileOutputs, plan.events)
        return SignalService(onInterrupt: { count in
            if count == 2 {
                // A second signal means "stop waiting", never "throw away": files are finished.
                writeStandardError("\ncamrec: interrupted twice; finishing the files without waiting for stdout or network peers\n")
                outputSet.abandon()
                recorder.stop()
            }
        }, onSignal: { signal in
            if signal == SIGHUP { fileOutputs.forEach { $0.requestNewFile() } }
            if signal == SIGUSR1 { triggerBySignal(eventClips, clearStatus: clearStatus) }
        })
    }

    /// The recording on a thread of its own: the HTTP server listening first (else `refused` hears why),
    /// the outputs opened, the sound started with the first frame, then capture to the end.
    private func recordingService(_ plan: RecordingPlan, hooks: Recorder.Hooks, httpServer: LiveHTTPServer?, motion: MotionWatcher?, clearStatus: String,
                                  refused: @escaping @Sendable (String) -> Void) -> BlockingWorkService<RecordingResult> {
        let (outputSet, recorder, sound) = (plan.outputSet, plan.recorder, plan.sound)
        return BlockingWorkService(name: "recording", work: { () -> RecordingResult in
            // The HTTP server listens before capture starts: a port in use fails before anything is recorded.
            if let httpServer, let reason = waitForHTTPServer(httpServer) {
                refused(reason)
                return RecordingResult()
            }
            // Outputs before the camera: a bad path fails before anything is recorded.
            do throws(OutputError) {
                try outputSet.open { [weak recorder] error in recorder?.stop(failing: .output(error)) }
                // Sound starts with the first frame and ends where the last one does, before the hubs close.
                var hooks = hooks
                if let sound {
                    hooks.onVideoEnded = { end in sound.finish(atPresentation: end) }
                    hooks.onCaptureEnded = { end in sound.endPublishing(atPresentation: end) }
                    hooks.onCaptureResumed = { start in sound.resumePublishing(fromPresentation: start) }
                    sound.start { error in printLine(clearStatus + "camrec: warning: the sound stopped (\(error)); the video goes on") }
                }
                var result = recorder.run(hooks: hooks)
                // Motion's last triggers before the clips are finished.
                motion?.stop()
                result.settle(outputs: outputSet.finish())
                return result
            } catch {
                var result = RecordingResult()
                result.failure = .output(error)
                return result
            }
        }, stop: { recorder.stop() })
    }

    /// One line per finished stream output, key=value, for logs and scripts (files say theirs as each
    /// is finished; servers, viewers and clips none).
    private func summaryLines(_ result: RecordingResult) -> [String] {
        var lines: [String] = []
        for output in result.outputs where [.stdout, .push, .listen].contains(output.kind) {
            // An output that never got a frame was removed; the error line says why.
            if output.frames == 0 && result.failure != nil { continue }
            var fields = ["output=\(quotedField(output.path ?? output.label))", "frames=\(output.frames)",
                          "idr=\(output.idrFrames)", "duration=\(result.durationSeconds.decimalText(places: 3))s",
                          "bytes=\(output.bytes)", "dropped=\(result.source.dropped)"]
            if result.source.errored > 0 { fields.append("errored=\(result.source.errored)") }
            if output.skippedFrames > 0 { fields.append("skipped=\(output.skippedFrames)") }
            lines.append("camrec: finished " + fields.joined(separator: " "))
        }
        return lines
    }
}
