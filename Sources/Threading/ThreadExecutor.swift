import Synchronization

/// Runs the jobs of the tasks that prefer it on one thread of its own, in order: async code whose work
/// blocks (decoding, writing a file, a SwiftNIO `.wait()`) then holds up neither Swift's cooperative
/// pool nor an event loop. `shutdown` ends the thread once the jobs enqueued before it have run.
public final class ThreadExecutor: TaskExecutor, Sendable {
    private struct Queue {
        var jobs: [UnownedJob] = []
        var closed = false
    }
    private let queue = Monitor(Queue())
    private let worker = Mutex<WorkerThread?>(nil)

    /// - Parameter name: the thread's name (`top -H`).
    public init(name: String) {
        // The thread holds the executor until `shutdown` has let it end.
        let thread = WorkerThread(name: name) { [self] in
            while let job = queue.wait(until: { !$0.jobs.isEmpty || $0.closed }, then: { q -> UnownedJob? in
                q.jobs.isEmpty ? nil : q.jobs.removeFirst()
            }) {
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
        worker.withLock { $0 = thread }
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.change { $0.jobs.append(job) }
    }

    /// Ends the thread after the jobs already enqueued, and waits for it; not from the thread itself.
    public func shutdown() {
        queue.change { $0.closed = true }
        worker.withLock { $0.take() }?.join()
    }
}
