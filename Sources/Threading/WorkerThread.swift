import Glibc

/// A joinable POSIX thread running one closure; the pipeline's stages each get one.
/// Sendable by its invariant: `thread` is touched only by the thread that starts, joins or detaches it (ThreadPrimitiveTests).
public final class WorkerThread: @unchecked Sendable {
    private var thread: pthread_t?
    private let body: () -> Void
    public let name: String

    public init(name: String, body: @escaping () -> Void) {
        self.name = name
        self.body = body
    }

    public func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { arg in
            let worker = Unmanaged<WorkerThread>.fromOpaque(arg!).takeRetainedValue()
            WorkerThread.nameCurrentThread(worker.name)
            // Started from a dispatch thread, it would run at that thread's nice value, not the user's.
            ProcessNice.applyToCurrentThread()
            worker.body()
            return nil
        }, box)
        precondition(rc == 0, "could not start thread \(name): \(rc)")
        thread = t
    }

    /// Names the calling thread for top -H, gdb and the test VA driver's per-thread call counts:
    /// the kernel keeps 15 bytes of it. (pthread_setname_np does not import into Swift; writing
    /// /proc/thread-self/comm is what it does on Linux.)
    static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Nobody will join it: its resources go when it ends.
    public func detach() {
        guard let t = thread else { return }
        pthread_detach(t)
        thread = nil
    }

    public func join() {
        guard let t = thread else { return }
        pthread_join(t, nil)
        thread = nil
    }
}
