import Glibc

/// CPU time of the calling thread, in nanoseconds: what an upload costs the CPU, apart from
/// time spent waiting (a driver lock held by an encode on another thread, the GPU).
enum ThreadCPUClock {
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
