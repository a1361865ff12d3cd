import ServiceLifecycle
import Synchronization

/// Blocking media work (capture and encoding, a receiver's socket loop) as one service of camrec's
/// service group: the work runs on a thread of its own, never on the cooperative pool it would hold up,
/// and the group's graceful shutdown asks it to stop. The service ends when the work returns, with
/// its outcome kept for the caller. This is the one bridge between the media threads and async code.
public final class BlockingWorkService<Outcome: Sendable>: Service, Sendable {
    private let name: String
    private let work: @Sendable () -> Outcome
    private let stop: @Sendable () -> Void
    private let kept = Mutex<Outcome?>(nil)

    /// - Parameters:
    ///   - name: the thread's name (`top -H`).
    ///   - work: runs once, on the new thread.
    ///   - stop: called, from another thread, when the group shuts down while the work runs; the work
    ///     must then return soon (it may be called before the work has started, and more than once).
    public init(name: String, work: @escaping @Sendable () -> Outcome, stop: @escaping @Sendable () -> Void) {
        self.name = name
        self.work = work
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
        let (name, work, stop) = (self.name, self.work, self.stop)
        // Cancelled (another service failed) or shut down: either way the work is asked to stop, and the
        // service still waits for it, so that nothing it was writing is left half done.
        let outcome = await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withCheckedContinuation { (done: CheckedContinuation<Outcome, Never>) in
                    // Detached: the continuation is what waits for it, and a joinable thread nobody
                    // joins keeps its stack until the process ends (one per run).
                    let worker = WorkerThread(name: name) { done.resume(returning: work()) }
                    worker.start()
                    worker.detach()
                }
            } onGracefulShutdown: {
                stop()
            }
        } onCancel: {
            stop()
        }
        kept.withLock { $0 = outcome }
    }
}
