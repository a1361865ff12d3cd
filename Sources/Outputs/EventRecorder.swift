import Glibc
import Hub
import Synchronization
import SystemSupport

/// Event clips (`--event-output`): the minute around each trigger, beginning before it.
///
/// The hub keeps the last pre-roll seconds of stream in its ring. A trigger when no clip is being
/// written opens one: an `EventClipOutput` subscribed from the newest IDR presented at or before
/// (trigger frame − pre-roll), ending after the access unit presented at (last trigger frame +
/// post-roll). A trigger during a clip moves its end on. A clip longer than `maximumClipSeconds`
/// goes on in a new file at the next IDR (a segment), so nothing is lost or doubled between them.
/// The trigger frame is the newest access unit the hub has published when the trigger arrives.
///
/// Writing a clip never holds up capture longer than a file output can: the pre-roll is already
/// encoded and waits in the clip's queue (on top of its own depth), drained by the clip's thread.
/// A clip that cannot be written ends with its error; the recording it came from goes on.
public final class EventRecorder: StreamOutput, Sendable {
    public struct Configuration: Sendable {
        public var preRollSeconds: Double
        public var postRollSeconds: Double
        /// Each clip's files: the pattern (`{n}` counts event files over the run), the container, and
        /// `segmentSeconds` as the longest a clip file gets.
        public var files: RecordingFileOutput.Configuration

        public init(preRollSeconds: Double, postRollSeconds: Double, files: RecordingFileOutput.Configuration) {
            self.preRollSeconds = preRollSeconds.isFinite ? max(0, preRollSeconds) : 0
            self.postRollSeconds = postRollSeconds.isFinite ? max(0, postRollSeconds) : 0
            self.files = files
        }

        /// The most stream bytes the pre-roll keeps: past it the oldest picture groups are let go, and
        /// a clip begins later than asked (its event says how much pre-roll it got).
        public static let maximumPrerollBytes = 256 << 20

        /// What the hub's ring must keep: the pre-roll (and a second, so a frame published between a
        /// trigger and its subscription cannot push the clip's first IDR out), within its bounds.
        public func ringBounds(framesPerSecond: Double, keyframeInterval: Int) -> RingBounds {
            let rate = framesPerSecond.isFinite && framesPerSecond > 0 ? min(framesPerSecond, 1000) : 30
            let frames = (preRollSeconds + 2) * rate + Double(max(1, keyframeInterval)) * 2
            return RingBounds(seconds: preRollSeconds + 1, maximumBytes: Self.maximumPrerollBytes,
                              maximumFrames: Int(min(frames, 200_000)) + 64)
        }
    }

    /// What set an event off.
    public enum Trigger: String, Sendable, Codable {
        case signal, http, command, motion
    }

    /// One event: its triggers, its clip's frames and files (`/api/events`).
    public struct Event: Sendable, Codable, Equatable {
        public var id: Int
        public var trigger: Trigger
        public var label: String?
        /// When the first trigger came and when the clip's last file was finished (ISO 8601, UTC).
        public var start: String
        public var end: String?
        public var triggers: Int
        /// The frame numbers of the first and last trigger (the newest encoded when each came).
        public var triggerFrame: UInt64
        public var lastTriggerFrame: UInt64
        /// The clip's first frame (an IDR) and last frame, once written.
        public var firstFrame: UInt64?
        public var lastFrame: UInt64?
        /// Seconds of stream before the trigger frame that the clip holds.
        public var prerollSeconds: Double?
        public var files: [String]
        public var error: String?
        /// With `--motion`: the largest share of the picture that moved (0-1) among its motion triggers.
        public var motionScore: Double?
    }

    public enum Outcome: Sendable {
        case started(Event)
        case extended(Event)
        /// Nothing was done; why, in one line.
        case refused(String)
    }

    public let configuration: Configuration
    public var kind: OutputKind { .events }
    public var label: String { "events " + configuration.files.pattern.template }
    /// Never set: a clip that fails ends with its error in its event, and the recording goes on.
    public var failure: OutputError? { nil }
    /// What the recorder tells, each set before `open` (behind a lock: the clips' threads read them).
    private struct Callbacks {
        var onEventEnded: (@Sendable (Event) -> Void)?
        var onFileFinished: (@Sendable (FinishedFile) -> Void)?
        var onFileDeleted: (@Sendable (String) -> Void)?
        var onEventStarted: (@Sendable (Event, _ firstPicture: (accessUnit: [UInt8], sequence: UInt64)?) -> Void)?
    }
    private let callbacks = Mutex(Callbacks())
    /// Called on the clip's thread when its last file is finished (the event as it ended).
    public var onEventEnded: (@Sendable (Event) -> Void)? {
        get { callbacks.withLock { $0.onEventEnded } }
        set { callbacks.withLock { $0.onEventEnded = newValue } }
    }
    /// Called on the clip's thread with each clip file finished.
    public var onFileFinished: (@Sendable (FinishedFile) -> Void)? {
        get { callbacks.withLock { $0.onFileFinished } }
        set { callbacks.withLock { $0.onFileFinished = newValue } }
    }
    /// Called with each old clip file retention (`--event-keep-files`, `--event-keep-for`) deleted.
    public var onFileDeleted: (@Sendable (String) -> Void)? {
        get { callbacks.withLock { $0.onFileDeleted } }
        set { callbacks.withLock { $0.onFileDeleted = newValue } }
    }
    /// Called on the trigger's thread when an event starts, with a copy of its clip's first access unit
    /// (the IDR with its parameter sets, for a thumbnail) and that picture's frame number.
    public var onEventStarted: (@Sendable (Event, _ firstPicture: (accessUnit: [UInt8], sequence: UInt64)?) -> Void)? {
        get { callbacks.withLock { $0.onEventStarted } }
        set { callbacks.withLock { $0.onEventStarted = newValue } }
    }

    private struct Current {
        var clip: EventClipOutput
        var id: Int
        var triggerPresentation: UInt64
    }
    private struct State {
        var hub: StreamHub?
        var current: Current?
        /// Clips that have ended, their threads still to be joined.
        var ended: [EventClipOutput] = []
        var events: [Event] = []
        var nextID = 1
        var report: OutputReport
        /// `finish` has begun: it joins the clips itself.
        var finishing = false
        var totals = Totals()
        /// What the clips that have ended wrote (the one being written adds its own, live).
        var endedClips = OutputCounters()
    }

    /// Counts over the whole run (the event list keeps only the newest), for `/metrics`.
    public struct Totals: Sendable, Equatable {
        public var events: [Trigger: Int] = [:]
        public var triggers: [Trigger: Int] = [:]
        /// Events whose clip is being written now (0 or 1).
        public var open = 0
    }
    public var totals: Totals {
        state.withLock { s in
            var totals = s.totals
            totals.open = s.current == nil ? 0 : 1
            return totals
        }
    }
    private let state: Mutex<State>
    private let fileNumbers = FileNumbering()
    /// The events kept for `/api/events`: the newest ones.
    public static let eventsKept = 1000

    public init(configuration: Configuration) {
        var files = configuration.files
        // Two clips in one second with a time-only pattern: the second gets NAME-2, never the first's file.
        files.overwrite = false
        files.numbering = fileNumbers
        self.configuration = Configuration(preRollSeconds: configuration.preRollSeconds,
                                           postRollSeconds: configuration.postRollSeconds, files: files)
        state = Mutex(State(report: OutputReport(kind: .events, label: "events " + configuration.files.pattern.template)))
    }

    /// Checks that the clips' folder can be made and written now, so a bad `--event-output` fails
    /// before anything is recorded; clips open only when an event comes.
    public func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        let path = configuration.files.pattern.render(time: time(nil), segment: 1, device: configuration.files.device)
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        do {
            try FileSink.makeDirectories(directory)
        } catch let error as OutputError {
            throw OutputError(error.kind, "--event-output: " + error.message)
        }
        guard access(directory, W_OK) == 0 else {
            throw OutputError(.unwritable, "--event-output: cannot write in \(directory); choose a writable place")
        }
        state.withLock { $0.hub = hub }
    }

    /// Starts an event, or extends the one being written.
    /// - Parameter frame: the frame the trigger belongs to (motion: the frame that moved), when it is
    ///   not the newest captured.
    /// - Parameter motionScore: the share of the picture that moved, for a motion trigger.
    public func trigger(_ trigger: Trigger, label: String? = nil, frame: StreamHub.PublishedFrame? = nil,
                        motionScore: Double? = nil) -> Outcome {
        joinEndedClips()
        var firstPicture: (accessUnit: [UInt8], sequence: UInt64)?
        var told: (@Sendable (Event, _ firstPicture: (accessUnit: [UInt8], sequence: UInt64)?) -> Void)?
        let outcome = state.withLock { s -> Outcome in
            guard let hub = s.hub, !hub.isClosed, !s.finishing else { return .refused("the recording is not running") }
            guard let published = hub.newest else { return .refused("no frame has been encoded yet; try again in a moment") }
            // A signal's or a request's "now" is the camera's newest frame, not the newest encoded: behind a
            // starved encoder that is seconds old, and a clip's pre- and post-roll were reckoned from it (in the test
            // VM a clip began at the IDR 14 s before the one asked for).
            let captured = hub.newestCaptured.flatMap { $0.presentationTimeNanoseconds > published.presentationTimeNanoseconds ? $0 : nil }
            let newest = frame ?? captured ?? published
            let post = UInt64(configuration.postRollSeconds * 1e9)
            let end = newest.presentationTimeNanoseconds &+ post
            s.totals.triggers[trigger, default: 0] += 1
            if let current = s.current, let i = index(of: current.id, in: s), current.clip.extend(endingAfter: end) {
                s.events[i].triggers += 1
                s.events[i].lastTriggerFrame = newest.sequence
                if s.events[i].label == nil { s.events[i].label = label }
                if let motionScore { s.events[i].motionScore = max(s.events[i].motionScore ?? 0, motionScore) }
                return .extended(s.events[i])
            }
            let id = s.nextID
            s.nextID += 1
            s.totals.events[trigger, default: 0] += 1
            let event = Event(id: id, trigger: trigger, label: label, start: iso8601UTCNow(), end: nil, triggers: 1,
                              triggerFrame: newest.sequence, lastTriggerFrame: newest.sequence, firstFrame: nil,
                              lastFrame: nil, prerollSeconds: nil, files: [], error: nil, motionScore: motionScore)
            let clip = EventClipOutput(configuration: configuration.files, endingAfter: end,
                                       onFileFinished: { [weak self] file in self?.clipFileFinished(id: id, file) },
                                       onFileDeleted: { [weak self] path in self?.onFileDeleted?(path) },
                                       onFailure: { [weak self] error in self?.clipFailed(id: id, error) },
                                       onClipEnded: { [weak self] clip in self?.clipEnded(id: id, clip) })
            let pre = UInt64(configuration.preRollSeconds * 1e9)
            let from = newest.presentationTimeNanoseconds >= pre ? newest.presentationTimeNanoseconds - pre : 0
            if s.events.count >= Self.eventsKept { s.events.removeFirst(s.events.count - Self.eventsKept + 1) }
            s.events.append(event)
            do {
                try clip.open(hub: hub, from: .atOrBefore(presentationNanoseconds: from))
            } catch {
                let message = (error as? OutputError)?.message ?? "\(error)"
                s.events[s.events.count - 1].error = message
                s.events[s.events.count - 1].end = iso8601UTCNow()
                return .refused("event \(id): \(message)")
            }
            s.current = Current(clip: clip, id: id, triggerPresentation: newest.presentationTimeNanoseconds)
            if let onEventStarted {
                firstPicture = hub.keyframe(atOrBefore: from)
                told = onEventStarted
            }
            return .started(event)
        }
        if case .started(let event) = outcome { told?(event, firstPicture) }
        return outcome
    }

    /// The camera went away: the clip being written ends after the last frame before the gap.
    public func endClipAtSourceGap() {
        state.withLock { $0.current?.clip }?.endAtSourceGap()
    }

    /// The events so far (the newest `eventsKept`), oldest first.
    public var events: [Event] { state.withLock { $0.events } }

    private func index(of id: Int, in s: State) -> Int? {
        s.events.lastIndex { $0.id == id }
    }

    private func clipFileFinished(id: Int, _ file: FinishedFile) {
        state.withLock { s in
            s.report.frames += file.frames
            s.report.bytes += file.bytes
            s.report.idrFrames += file.idrFrames
            s.report.path = file.path
            guard let i = index(of: id, in: s) else { return }
            s.events[i].files.append(file.path)
            if s.events[i].firstFrame == nil, let first = file.firstFrame {
                s.events[i].firstFrame = first
                if let current = s.current, current.id == id, let start = file.firstPresentationNanoseconds {
                    s.events[i].prerollSeconds = Double(Int64(bitPattern: current.triggerPresentation &- start)) / 1e9
                }
            }
            if let last = file.lastFrame { s.events[i].lastFrame = last }
        }
        onFileFinished?(file)
    }

    private func clipFailed(id: Int, _ error: OutputError) {
        state.withLock { s in
            if let i = index(of: id, in: s) { s.events[i].error = error.message }
            s.report.error = s.report.error ?? error
        }
    }

    private func clipEnded(id: Int, _ clip: EventClipOutput) {
        let event = state.withLock { s -> Event? in
            if let current = s.current, current.clip === clip { s.current = nil }
            if !s.finishing { s.ended.append(clip) }
            let written = clip.counters
            s.endedClips.frames += written.frames
            s.endedClips.bytes += written.bytes
            guard let i = index(of: id, in: s) else { return nil }
            s.events[i].end = iso8601UTCNow()
            return s.events[i]
        }
        if let event { onEventEnded?(event) }
    }

    private func joinEndedClips() {
        let ended = state.withLock { s -> [EventClipOutput] in
            guard !s.finishing else { return [] }
            defer { s.ended = [] }
            return s.ended
        }
        for clip in ended { clip.finish() }
    }

    /// Frames and bytes of stream written to clips so far, the clip being written included.
    public var counters: OutputCounters {
        let (ended, current) = state.withLock { ($0.endedClips, $0.current?.clip) }
        var counters = ended
        if let live = current?.counters {
            counters.frames += live.frames
            counters.bytes += live.bytes
        }
        return counters
    }

    /// After the hub has closed: the clip being written takes what it holds and ends.
    public func finish() -> OutputReport {
        let clips = state.withLock { s -> [EventClipOutput] in
            s.finishing = true
            defer { s.ended = [] }
            return s.ended + (s.current.map { [$0.clip] } ?? [])
        }
        for clip in clips { clip.finish() }
        return state.withLock { $0.report }
    }
}

/// The `{n}` of event clip files: one count over every clip of the run, so clip files never share a number.
public final class FileNumbering: Sendable {
    private let last = Atomic<Int>(0)
    public init() {}
    public func next() -> Int { last.add(1, ordering: .relaxed).newValue }
}
