import NIOCore

/// Runs a task's jobs on one SwiftNIO event loop: receiver sessions prefer the loop their connection
/// lives on, so they add no thread (Swift's global pool would start its own, up to one per core) and
/// their writes need no hop to another thread.
public final class EventLoopExecutor: TaskExecutor, Sendable {
    let loop: EventLoop

    public init(_ loop: EventLoop) {
        self.loop = loop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}
