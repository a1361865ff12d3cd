import ServiceLifecycle
import Synchronization

/// Blocking media work (capture and encoding, a receiver's socket loop) as one service of camrec's
/// service group: the work runs on a thread of its own, never on the cooperative pool it would hold up,
/// and the group's graceful shutdown asks it to stop. The service ends when the work returns, with
/// its outcome kept for the caller. This is the one bridge between the media threads and async code.
public final class BlockingWorkService<Outcome: Sendable>: Service, Sendable {
    private let name: String
    /// Taken by `run`: the work runs once, and what it holds goes before `run` returns.
    private let work: Mutex<(@Sendable () -> Outcome)?>
    private let stop: @Sendable () -> Void
    private let kept = Mutex<Outcome?>(nil)

    /// - Parameters:
    ///   - name: the thread's name (`top -H`).
    ///   - work: runs once, on the new thread.
    ///   - stop: called, from another thread, when the group shuts down while the work runs; the work
    ///     must then return soon (it may be called before the work has started, and more than once).
    public init(name: String, work: @escaping @Sendable () -> Outcome, stop: @escaping @Sendable () -> Void) {
        self.name = name
        self.work = Mutex(work)
        self.stop = stop
    }

    /// What the work returned; nil until it has.
    public var outcome: Outcome? { kept.withLock { $0 } }

    /// What the work returned, read once the service group has ended: a group runs every service it
    /// is given, so it has.
    public var finishedOutcome: Outcome {
        guard let outcome else { preconditionFailure("\(name): the service group ended without running this work") }
        return outcome
    }

    public func run() async {
        let (name, stop) = (self.name, self.stop)
        let worker = Mutex<WorkerThread?>(nil)
        // Cancelled (another service failed) or shut down: either way the work is asked to stop, and the
        // service still waits for it, so that nothing it was writing is left half done.
        let outcome = await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withCheckedContinuation { (done: CheckedContinuation<Outcome, Never>) in
                    // The thread alone holds the work from here on.
                    guard let work = self.work.withLock({ $0.take() }) else { preconditionFailure("\(name): run twice") }
                    let thread = WorkerThread(name: name) { done.resume(returning: work()) }
                    thread.start()
                    worker.withLock { $0 = thread }
                }
            } onGracefulShutdown: {
                stop()
            }
        } onCancel: {
            stop()
        }
        // Joined, and the work released, before this returns: a detached thread still held the work (a
        // recording: its encoders, the VA display) after resuming, and released it while main was already
        // in exit(), which crashed camrec after its last line (exit 139 in vaapi-host, CI 2026-11-28).
        // Only the thread's return is left to wait for.
        worker.withLock { $0.take() }?.join()
        kept.withLock { $0 = outcome }
    }
}
