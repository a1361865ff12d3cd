import ArgumentParser
import Audio
import Synchronization
import Bitstream
import Containers
import Frames
import Hub
import Motion
import Threading
import Outputs
import SystemSupport

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

    @Option(parsing: .unconditional, help: "Keep at most N clip files of --event-output's pattern (counting the one being written); delete the oldest.")
    var eventKeepFiles: Int?

    @Option(help: "Delete clip files of --event-output's pattern older than DURATION (90s, 30m, 12h, 7d).")
    var eventKeepFor: String?

    @Flag(help: "Start or extend an event when something moves in the picture (needs --event-output): differences of each frame's downscaled brightness from a learned background; changes of the whole picture (lights, exposure, a day/night switch) are not motion.")
    var motion = false

    @Option(parsing: .unconditional, help: "With --motion: brightness levels (1-255) a 16x16 area must change by (default 12).")
    var motionThreshold: Int?

    @Option(parsing: .unconditional, help: "With --motion: percent of the picture (outside the mask) that must change (default 0.5).")
    var motionArea: Double?

    @Option(help: ArgumentHelp("With --motion: ignore this rectangle, in pixels (a clock overlay, a tree, a road), or the dark parts of a PGM image (black hides, white is watched; drawn on a snapshot of any size, it is stretched over the picture); may be given more than once.", valueName: "X,Y,W,H|FILE.pgm"))
    var motionMask: [String] = []

    @Option(help: ArgumentHelp("Run CMD (with /bin/sh) when each event's clip is finished; it gets CAMREC_EVENT_ID, CAMREC_EVENT_TRIGGER, CAMREC_EVENT_LABEL, CAMREC_EVENT_FILE (the clip's first file), CAMREC_EVENT_LAST_FILE, CAMREC_EVENT_FILES (how many), CAMREC_EVENT_START, CAMREC_EVENT_END, CAMREC_EVENT_FIRST_FRAME, CAMREC_EVENT_LAST_FRAME and CAMREC_EVENT_MOTION in its environment, never in the command line.", valueName: "CMD"))
    var onEventEnd: String?

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
        try OptionRange.check(eventKeepFiles, "--event-keep-files", in: 1...1_000_000)
        if let eventKeepFor, let seconds = RetentionPolicy.parseDuration(eventKeepFor) {
            try OptionRange.checkSeconds(seconds, "--event-keep-for")
        } else if let eventKeepFor {
            throw ValidationError("--event-keep-for \(eventKeepFor): give a duration such as 3600, 90s, 30m, 12h or 7d")
        }
        if eventOutput == nil && (eventKeepFiles != nil || eventKeepFor != nil) {
            throw ValidationError("--event-keep-files and --event-keep-for go with --event-output PATTERN")
        }
        if onEventEnd != nil && eventOutput == nil {
            throw ValidationError("--on-event-end goes with --event-output PATTERN")
        }
        if !motion && (motionThreshold != nil || motionArea != nil || !motionMask.isEmpty) {
            throw ValidationError("--motion-threshold, --motion-area and --motion-mask go with --motion")
        }
        if motion && eventOutput == nil {
            throw ValidationError("--motion starts events: give --event-output PATTERN for their clips")
        }
        if let motionThreshold, !(1...255).contains(motionThreshold) {
            throw ValidationError("--motion-threshold must be between 1 and 255 brightness levels; got \(motionThreshold)")
        }
        if let motionArea, !(motionArea.isFinite && motionArea > 0 && motionArea <= 100) {
            throw ValidationError("--motion-area must be a percentage more than 0 and at most 100; got \(motionArea)")
        }
        _ = try motionMasks()
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

    /// `--motion-mask` values: rectangles X,Y,W,H in pixels (whole numbers, W and H above 0), and PGM
    /// images (any value that is not four numbers is a file name).
    func motionMasks() throws -> (rectangles: [MotionDetector.Rectangle], images: [GrayMask]) {
        var rectangles: [MotionDetector.Rectangle] = [], images: [GrayMask] = []
        for text in motionMask {
            let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0.trimmingWhitespace()) }
            if parts.count == 4, let x = parts[0], let y = parts[1], let w = parts[2], let h = parts[3],
               (0...100_000).contains(x), (0...100_000).contains(y), (1...100_000).contains(w), (1...100_000).contains(h) {
                rectangles.append(MotionDetector.Rectangle(x: x, y: y, width: w, height: h))
            } else if text.contains(",") || text.isEmpty {
                throw ValidationError("--motion-mask \(text): give X,Y,W,H in pixels, e.g. 0,0,640,48, or a PGM image")
            } else {
                let bytes: [UInt8]
                do { bytes = try readRegularFile(text, limit: Self.maximumMaskFileBytes) } catch {
                    throw ValidationError("--motion-mask \(text): \(error)")
                }
                do { images.append(try GrayMask(pgm: bytes)) } catch {
                    throw ValidationError("--motion-mask \(text): \(error)")
                }
            }
        }
        return (rectangles, images)
    }

    /// A PGM mask of the largest size (8192x8192, 16 bits) with room for its header.
    static let maximumMaskFileBytes = 2 * GrayMask.maximumSide * GrayMask.maximumSide + 4096

    /// The detector's settings for a picture of `size`; a usage error when the masks leave nothing of it
    /// to watch (motion could never be seen), known only once the source has said its size.
    func motionSettings(size: FrameSize) throws -> MotionDetector.Settings {
        let masks = try motionMasks()
        // Several drawn masks hide where any of them is dark: one image, the union, at the first one's size.
        var image = masks.images.first
        if let first = image, masks.images.count > 1 {
            var hidden = first.hidden
            for other in masks.images.dropFirst() {
                for row in 0..<first.height {
                    for column in 0..<first.width where other.hides(x: column, y: row, frameWidth: first.width, frameHeight: first.height) {
                        hidden[row * first.width + column] = true
                    }
                }
            }
            image = GrayMask(width: first.width, height: first.height, hidden: hidden)
        }
        let settings = MotionDetector.Settings(threshold: motionThreshold ?? MotionDetector.Settings.defaultThreshold,
                                               minimumArea: (motionArea ?? MotionDetector.Settings.defaultMinimumArea * 100) / 100,
                                               mask: masks.rectangles, maskImage: image)
        if motion && MotionDetector(width: size.width, height: size.height, settings: settings).countedCells == 0 {
            throw ValidationError("--motion-mask hides the whole \(size.width)x\(size.height) picture: nothing is left to watch for motion; leave part of it unmasked")
        }
        return settings
    }

    /// With `--motion`: a detector on every frame before it is encoded, triggering `events`.
    func makeMotionWatcher(events: EventRecorder?, size: FrameSize) throws -> MotionWatcher? {
        guard motion, let events else { return nil }
        let settings = try motionSettings(size: size)
        return MotionWatcher(detector: MotionDetector(width: size.width, height: size.height, settings: settings), events: events)
    }

    /// The event recorder for `--event-output`, or nil.
    /// - Parameter audio: the recording's sound, in clips with a container (their pre-roll's too).
    func makeRecorder(codec: VideoCodec, device: String, framesPerSecond: Double, audio: AudioTrackFormat? = nil) throws -> EventRecorder? {
        guard let eventOutput else { return nil }
        let pattern = try OutputNamePattern(eventOutput)
        let container = ContainerFormat(fileName: eventOutput)
        let makeContainer: ContainerWriterFactory = { format, sink in
            try ContainerWriters.make(format: format, codec: codec, sink: sink, framesPerSecond: framesPerSecond, audio: audio)
        }
        var files = RecordingFileOutput.Configuration(pattern: pattern, device: device, overwrite: false,
                                                      segmentSeconds: maxClipLength ?? Self.defaultMaxClipLength,
                                                      retention: RetentionPolicy(maximumFiles: eventKeepFiles,
                                                                                 maximumAgeSeconds: eventKeepFor.flatMap(RetentionPolicy.parseDuration)),
                                                      format: container, makeContainer: container == .raw ? nil : makeContainer)
        files.takesAudio = audio != nil && container != .raw
        return EventRecorder(configuration: .init(preRollSeconds: preRoll ?? Self.defaultPreRoll,
                                                  postRollSeconds: postRoll ?? Self.defaultPostRoll, files: files))
    }
}

extension RecordCommand {
    /// Says each event's start, extension and end on stderr (one line each, key=value).
    func prepareEvents(_ events: EventRecorder?, clearStatus: String) {
        guard let events else { return }
        let onEventEnd = self.events.onEventEnd
        events.onFileFinished = { file in
            printLine(clearStatus + finishedFileLine(file, dropped: 0).replacing(" dropped=0", with: ""))
        }
        events.onFileDeleted = { path in printLine(clearStatus + "camrec: retention: deleted \(path)") }
        events.onEventEnded = { event in
            var fields = ["event=\(event.id)", "trigger=\(event.trigger.rawValue)", "triggers=\(event.triggers)"]
            if let first = event.firstFrame, let last = event.lastFrame { fields.append("frames=\(first)-\(last)") }
            if let pre = event.prerollSeconds { fields.append("pre-roll=\(pre.decimalText(places: 3))s") }
            if let score = event.motionScore { fields.append("motion=\((score * 100).decimalText(places: 1))%") }
            fields.append("files=\(event.files.count)")
            if let error = event.error { fields.append("error=\(quotedField(error))") }
            printLine(clearStatus + "camrec: event ended " + fields.joined(separator: " "))
            if let command = onEventEnd { runHookCommand(command, option: "--on-event-end", variables: Self.variables(of: event)) }
        }
    }

    /// What `--on-event-end` gets: the event, in CAMREC_EVENT_* variables (empty when unknown).
    static func variables(of event: EventRecorder.Event) -> [String: String] {
        ["CAMREC_EVENT_ID": String(event.id), "CAMREC_EVENT_TRIGGER": event.trigger.rawValue,
         "CAMREC_EVENT_LABEL": event.label ?? "", "CAMREC_EVENT_FILE": event.files.first ?? "",
         "CAMREC_EVENT_LAST_FILE": event.files.last ?? "", "CAMREC_EVENT_FILES": String(event.files.count),
         "CAMREC_EVENT_START": event.start, "CAMREC_EVENT_END": event.end ?? "",
         "CAMREC_EVENT_FIRST_FRAME": event.firstFrame.map { String($0) } ?? "",
         "CAMREC_EVENT_LAST_FRAME": event.lastFrame.map { String($0) } ?? "",
         "CAMREC_EVENT_MOTION": event.motionScore.map { $0.decimalText(places: 4) } ?? ""]
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
