import ArgumentParser
import Bitstream
import Containers
import Outputs

/// Event clips: what a trigger records, and how far around it.
struct EventOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Write a clip around each event (SIGUSR1, POST /api/events on --http) to a name from PATTERN: strftime fields, {device}, and {n} (the clip file's number in this run), e.g. 'events/%F/%H%M%S-{n}.mp4'; the container comes from the extension. Each clip begins at an IDR with SPS and PPS and plays on its own.", valueName: "PATTERN"))
    var eventOutput: String?

    @Option(parsing: .unconditional, help: "Seconds before the trigger each clip begins (default 5, at most 600): at the newest IDR at or before then, so with a longer keyframe interval a clip starts earlier, never later.")
    var preRoll: Double?

    @Option(parsing: .unconditional, help: "Seconds after the last trigger each clip ends (default 10, at most 3600); a trigger during a clip extends it.")
    var postRoll: Double?

    @Option(parsing: .unconditional, help: "Longest clip file in seconds (default 300): a longer event goes on in the next file from an IDR, no frame lost or repeated.")
    var maxClipLength: Double?

    static let defaultPreRoll = 5.0
    static let defaultPostRoll = 10.0
    static let defaultMaxClipLength = 300.0

    func validate() throws {
        try OptionRange.checkSeconds(preRoll, "--pre-roll", inclusive: true, maximum: 600)
        try OptionRange.checkSeconds(postRoll, "--post-roll", inclusive: true, maximum: 3600)
        try OptionRange.checkSeconds(maxClipLength, "--max-clip-length", minimum: 1, inclusive: true)
        if eventOutput == nil && (preRoll != nil || postRoll != nil || maxClipLength != nil) {
            throw ValidationError("--pre-roll, --post-roll and --max-clip-length go with --event-output PATTERN")
        }
        if let eventOutput {
            if eventOutput == "-" || MediaServerURL.schemeSeparator(eventOutput) != nil {
                throw ValidationError("--event-output \(MediaServerURL.redact(eventOutput)): clips go to files; give a file name pattern such as 'events/%F/%H%M%S-{n}.mp4'")
            }
            let pattern: OutputNamePattern
            do { pattern = try OutputNamePattern(eventOutput) } catch { throw ValidationError("--event-output \(error)") }
            if !pattern.hasPlaceholders {
                throw ValidationError("--event-output \(eventOutput): give a name that changes per clip, e.g. 'events/%F/%H%M%S-{n}.mp4'")
            }
        }
    }

    /// The event recorder for `--event-output`, or nil.
    func makeRecorder(codec: VideoCodec, device: String, framesPerSecond: Double) throws -> EventRecorder? {
        guard let eventOutput else { return nil }
        let pattern = try OutputNamePattern(eventOutput)
        let container = ContainerFormat(fileName: eventOutput)
        let makeContainer: ContainerWriterFactory = { format, sink in
            try LibavContainerWriter(format: format, codec: codec, sink: sink, framesPerSecond: framesPerSecond)
        }
        let files = RecordingFileOutput.Configuration(pattern: pattern, device: device, overwrite: false,
                                                      segmentSeconds: maxClipLength ?? Self.defaultMaxClipLength,
                                                      format: container, makeContainer: container == .raw ? nil : makeContainer)
        return EventRecorder(configuration: .init(preRollSeconds: preRoll ?? Self.defaultPreRoll,
                                                  postRollSeconds: postRoll ?? Self.defaultPostRoll, files: files))
    }
}

extension RecordCommand {
    /// Says each event's start, extension and end on stderr (one line each, key=value).
    func prepareEvents(_ events: EventRecorder?, clearStatus: String) {
        guard let events else { return }
        events.onFileFinished = { file in
            printLine(clearStatus + finishedFileLine(file, dropped: 0).replacingOccurrences(of: " dropped=0", with: ""))
        }
        events.onEventEnded = { event in
            var fields = ["event=\(event.id)", "trigger=\(event.trigger.rawValue)", "triggers=\(event.triggers)"]
            if let first = event.firstFrame, let last = event.lastFrame { fields.append("frames=\(first)-\(last)") }
            if let pre = event.prerollSeconds { fields.append("pre-roll=\(format(pre, decimals: 3))s") }
            fields.append("files=\(event.files.count)")
            if let error = event.error { fields.append("error=\(quotedField(error))") }
            printLine(clearStatus + "camrec: event ended " + fields.joined(separator: " "))
        }
    }

    /// SIGUSR1: starts or extends an event, and says which on stderr.
    func triggerBySignal(_ events: EventRecorder?, clearStatus: String) {
        guard let events else {
            printLine(clearStatus + "camrec: SIGUSR1 ignored: this recording makes no event clips (give --event-output PATTERN)")
            return
        }
        let outcome = events.trigger(.signal)
        if let line = Self.describe(outcome, via: .signal) { printLine(clearStatus + "camrec: " + line) }
    }

    /// The line a trigger is worth on stderr: a start or a refusal; nil for an extension (a flood of
    /// triggers during one clip is one event, counted as `triggers=` on its `event ended` line).
    static func describe(_ outcome: EventRecorder.Outcome, via trigger: EventRecorder.Trigger) -> String? {
        switch outcome {
        case .started(let event):
            return "event \(event.id) started at frame \(event.triggerFrame) (\(event.trigger.rawValue)\(event.label.map { ", label " + quotedField($0) } ?? ""))"
        case .extended:
            return nil
        case .refused(let why):
            return "event not started: \(why)"
        }
    }
}
