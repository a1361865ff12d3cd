import Bitstream
import Glibc
import Hub
import Pipeline
import Synchronization

/// An output stage with its own thread and a `.lossless` hub subscription in front of a `ByteSink`,
/// so a disk hiccup delays this output only; the encoder moves on until the subscription's queue
/// is full, and then waits (a file must not lose frames; the camera side drops and
/// counts instead).
public final class QueuedOutput: StreamOutput, @unchecked Sendable {
    public var kind: OutputKind { .stdout }
    public var label: String { sink.label }
    /// Given at `open`, before any thread of this output runs.
    private var onFailure: (@Sendable (OutputError) -> Void)?

    private let sink: ByteSink
    /// Touched only by the writer thread.
    private var timingNote: TimingNoteInserter?
    private let queueCapacity: Int
    private var subscription: Subscription?
    private var worker: WorkerThread?
    private let state: Mutex<State>
    private struct State {
        var report: OutputReport
        var failure: OutputError?
        var abandoned = false
        var writerDone = false
    }
    /// Opened when the writer thread ends or the output is abandoned: what `finish` waits for.
    private let writerDoneOrAbandoned = Latch()
    /// Outputs whose writer thread was left blocked: kept alive until the process exits.
    private static let leftBehind = Mutex<[QueuedOutput]>([])

    public var failure: OutputError? { state.withLock { $0.failure } }

    /// - Parameter queueCapacity: access units that may wait; a few seconds of video.
    /// - Parameter timingSEICodec: put camrec's timing note at the head of every access unit, as an
    ///   SEI of this codec (`--timing-sei`); nil for a bare stream.
    public init(sink: ByteSink, queueCapacity: Int = 240, timingSEICodec: VideoCodec? = nil) {
        self.sink = sink
        timingNote = timingSEICodec.map { TimingNoteInserter(codec: $0) }
        self.queueCapacity = max(1, queueCapacity)
        state = Mutex(State(report: OutputReport(kind: .stdout, label: sink.label)))
    }

    public func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        self.onFailure = onFailure
        try sink.open()
        guard let subscription = hub.subscribe(label, from: .nextIDR, policy: .lossless(depth: queueCapacity)) else {
            _ = try? sink.close(keep: false)
            throw OutputError(.unwritable, "\(label): the recording has already ended")
        }
        self.subscription = subscription
        let worker = WorkerThread(name: "out-\(label)") { [unowned self] in self.run() }
        self.worker = worker
        worker.start()
    }

    private func run() {
        defer {
            state.withLock { $0.writerDone = true }
            writerDoneOrAbandoned.open()
        }
        while let chunk = subscription?.next() {
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
                onFailure?(failure)
            }
        }
    }

    /// Drops what is queued and stops waiting for the writer thread, which may be blocked in
    /// write(2) on a pipe whose reader stopped reading; the process exits soon after.
    public func abandon() {
        state.withLock { $0.abandoned = true }
        writerDoneOrAbandoned.open()
        subscription?.cancel()
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
        worker?.join()
        worker = nil
        var report = state.withLock { $0.report }
        report.error = state.withLock { $0.failure }
        do {
            report.path = try sink.close(keep: report.frames > 0)
        } catch {
            let failure = error as? OutputError ?? OutputError(.unwritable, "\(label): \(error)")
            report.error = report.error ?? failure
        }
        return report
    }
}
