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

    /// Asks that the calling thread be scheduled `steps` nice values ahead of the process's others (from
    /// whatever the process was started at: `nice -n 15 camrec` gives it 5, not −10); Linux keeps nice per
    /// thread, and `who` 0 is the caller. Allowed with CAP_SYS_NICE or an RLIMIT_NICE that reaches it
    /// (systemd's LimitNICE=). Returns the nice value the thread got, or nil when refused (it runs on as it was).
    public static func raiseCurrentThreadPriority(by steps: Int32) -> Int32? {
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        errno = 0
        let current = getpriority(which, 0)
        // -1 is a nice value too: only errno tells a failure.
        if current == -1 && errno != 0 { return nil }
        let target = max(current - max(steps, 0), -20)
        return setpriority(which, 0, target) == 0 ? target : nil
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
