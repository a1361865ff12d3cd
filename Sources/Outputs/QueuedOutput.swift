import Bitstream
import Glibc
import Hub
import Threading
import Synchronization

/// An output stage with its own thread and a `.lossless` hub subscription in front of a `ByteSink`,
/// so a disk hiccup delays this output only; the encoder moves on until the subscription's queue
/// is full, and then waits (a file must not lose frames; the camera side drops and
/// counts instead).
public final class QueuedOutput: StreamOutput, Sendable {
    public var kind: OutputKind { .stdout }
    public let label: String

    /// Until `open`, the sink; then the writer thread's alone (it closes it before it ends).
    private let unopened: Mutex<ByteSink?>
    private let timingSEICodec: VideoCodec?
    private let queueCapacity: Int
    /// Set by `open`: what `abandon` cancels and `finish` joins.
    private let running = Mutex<(subscription: Subscription, worker: WorkerThread)?>(nil)
    private let state: Mutex<State>
    private struct State {
        var report: OutputReport
        var failure: OutputError?
        var abandoned = false
        var writerDone = false
        /// Where the sink's file ended (`ByteSink.close`), left by the writer thread.
        var path: String?
    }
    /// Opened when the writer thread ends or the output is abandoned: what `finish` waits for.
    private let writerDoneOrAbandoned = Latch()
    /// Outputs whose writer thread was left blocked: kept alive until the process exits.
    private static let leftBehind = Mutex<[QueuedOutput]>([])

    public var failure: OutputError? { state.withLock { $0.failure } }

    /// - Parameter queueCapacity: access units that may wait; a few seconds of video.
    /// - Parameter timingSEICodec: put camrec's timing note at the head of every access unit, as an
    ///   SEI of this codec (`--timing-sei`); nil for a bare stream.
    public init(sink: sending ByteSink, queueCapacity: Int = 240, timingSEICodec: VideoCodec? = nil) {
        label = sink.label
        unopened = Mutex(sink)
        self.timingSEICodec = timingSEICodec
        self.queueCapacity = max(1, queueCapacity)
        state = Mutex(State(report: OutputReport(kind: .stdout, label: label)))
    }

    public func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        guard let sink = unopened.withLock({ $0.take() }) else { preconditionFailure("\(label) opened twice") }
        try sink.open()
        guard let subscription = hub.subscribe(label, from: .nextIDR, policy: .lossless(depth: queueCapacity)) else {
            _ = try? sink.close(keep: false)
            throw OutputError(.unwritable, "\(label): the recording has already ended")
        }
        // The sink and the timing note go to the writer thread, which alone touches them from now on.
        let timingNote = timingSEICodec.map { TimingNoteInserter(codec: $0) }
        let worker = WorkerThread(name: "out-\(label)") { [unowned self] in
            self.run(sink, subscription: subscription, timingNote: timingNote, onFailure: onFailure)
        }
        running.withLock { $0 = (subscription, worker) }
        worker.start()
    }

    private func run(_ sink: ByteSink, subscription: Subscription, timingNote: TimingNoteInserter?,
                     onFailure: @Sendable (OutputError) -> Void) {
        var timingNote = timingNote
        defer {
            state.withLock { $0.writerDone = true }
            writerDoneOrAbandoned.open()
        }
        defer { closeWhenWritten(sink) }
        while let chunk = subscription.next() {
            defer { chunk.release() }
            if state.withLock({ $0.failure != nil }) { continue }
            do {
                let written = try sink.write(chunk, timingNote: &timingNote)
                sink.commitBoundary()
                state.withLock {
                    $0.report.bytes += written
                    $0.report.frames += 1
                    if chunk.isIDR { $0.report.idrFrames += 1 }
                }
            } catch {
                let failure = error as? OutputError ?? OutputError(.unwritable, "\(label): \(error)")
                state.withLock { $0.failure = failure }
                onFailure(failure)
            }
        }
    }

    /// The writer's last act, unless abandoned: the file is kept if it holds a frame.
    private func closeWhenWritten(_ sink: ByteSink) {
        let (frames, abandoned) = state.withLock { ($0.report.frames, $0.abandoned) }
        if abandoned { return }
        do {
            let path = try sink.close(keep: frames > 0)
            state.withLock { $0.path = path }
        } catch {
            let failure = error as? OutputError ?? OutputError(.unwritable, "\(label): \(error)")
            state.withLock { if $0.failure == nil { $0.failure = failure } }
        }
    }

    /// Drops what is queued and stops waiting for the writer thread, which may be blocked in
    /// write(2) on a pipe whose reader stopped reading; the process exits soon after.
    public func abandon() {
        state.withLock { $0.abandoned = true }
        writerDoneOrAbandoned.open()
        running.withLock { $0?.subscription }?.cancel()
    }

    public var counters: OutputCounters {
        let report = state.withLock { $0.report }
        var counters = OutputCounters()
        counters.frames = report.frames
        counters.bytes = report.bytes
        return counters
    }

    public func finish() -> OutputReport {
        // Wait for the writer, but not past a second interrupt: it may be stuck in write(2).
        writerDoneOrAbandoned.wait()
        if state.withLock({ $0.abandoned && !$0.writerDone }) {
            Self.leftBehind.withLock { $0.append(self) }
            var report = state.withLock { $0.report }
            report.error = OutputError(.abandoned, "\(label): abandoned after a second interrupt; "
                + "\(report.frames) frames had been written to it")
            return report
        }
        running.withLock { $0.take() }?.worker.join()
        return state.withLock { s in
            var report = s.report
            report.error = s.failure
            report.path = s.path
            return report
        }
    }
}
