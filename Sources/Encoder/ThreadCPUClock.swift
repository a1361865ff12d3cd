import Glibc

/// CPU time of the calling thread, in nanoseconds: what an upload costs the CPU, apart from
/// time spent waiting (a driver lock held by an encode on another thread, the GPU).
enum ThreadCPUClock {
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// How long the calling thread has waited, runnable, for a CPU (the second field of
    /// /proc/thread-self/schedstat), in nanoseconds; 0 where the kernel does not tell. An upload's wall
    /// time less this is its own work and its waits for the driver: on a busy machine being preempted
    /// alone made a 640x480 upload look like a driver that keeps mapping busy (1.3 ms a frame).
    /// The wait since an earlier `runQueueWait()`; 0 when either reading failed.
    static func runQueueWait(since earlier: UInt64) -> UInt64 {
        let now = runQueueWait()
        return earlier > 0 && now >= earlier ? now - earlier : 0
    }

    static func runQueueWait() -> UInt64 {
        let fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 96) { text -> UInt64 in
            var count = -1
            repeat { count = read(fd, text.baseAddress, text.count) } while count < 0 && errno == EINTR
            // "on-CPU run-queue-wait timeslices\n"; the digits are checked and the sum cannot overflow in 19 of them.
            var field = 0, value: UInt64 = 0, digits = 0
            for byte in text.prefix(max(count, 0)) {
                if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") {
                    if field == 1 { return digits > 0 ? value : 0 }
                    field += 1
                } else if field == 1 {
                    guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 19 else { return 0 }
                    value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
                    digits += 1
                }
            }
            return 0
        }
    }
}
