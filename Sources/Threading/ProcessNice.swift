import Glibc

/// The nice value camrec was started at (`nice -n 15 camrec`, systemd's `Nice=`), kept by each of its threads.
/// Linux keeps nice per thread, and a new thread inherits its starter's. camrec's threads are started from
/// Swift's dispatch threads, which set their own (0, or −4 for the overcommit ones when allowed), so without
/// this every worker ran at those whatever the user asked for.
public enum ProcessNice {
    private static var which: __priority_which_t { __priority_which_t(PRIO_PROCESS.rawValue) }

    /// The main thread's nice value: nothing in camrec changes it, and its thread id is the process id.
    /// Nil if it cannot be read.
    public static var startedAt: Int32? { niceOf(id_t(getpid())) }

    /// The calling thread's nice value; nil if it cannot be read.
    public static var currentThread: Int32? { niceOf(0) }

    /// Sets the calling thread to the process's nice value less `lead` (no lower than −20). Falling behind (a
    /// larger nice) is always allowed; running ahead needs CAP_SYS_NICE or an RLIMIT_NICE that reaches it
    /// (systemd's `LimitNICE=`). Returns the nice value the thread has now, or nil when it was refused (the
    /// thread keeps what it had).
    @discardableResult
    public static func applyToCurrentThread(lead: Int32 = 0) -> Int32? {
        guard let started = startedAt else { return nil }
        let target = max(started - max(lead, 0), -20)
        if currentThread == target { return target }
        return setpriority(which, 0, target) == 0 ? target : nil
    }

    private static func niceOf(_ thread: id_t) -> Int32? {
        errno = 0
        let value = getpriority(which, thread)
        // −1 is a nice value too: only errno tells a failure.
        return value == -1 && errno != 0 ? nil : value
    }
}
