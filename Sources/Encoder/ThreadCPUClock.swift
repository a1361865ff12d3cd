import Glibc
import Synchronization

/// CPU time of the calling thread, in nanoseconds: what an upload costs the CPU, apart from
/// time spent waiting (a driver lock held by an encode on another thread, the GPU).
enum ThreadCPUClock {
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

/// How long the calling thread has waited, runnable, for a CPU (the second field of its
/// /proc/thread-self/schedstat), in nanoseconds; 0 where the kernel does not tell. An upload's wall
/// time less this is its own work and its waits for the driver: on a busy machine being preempted
/// alone made a 640x480 upload look like a driver that keeps mapping busy (1.3 ms a frame).
/// The file stays open for the thread that last asked (one `pread` a reading); another thread opens its own.
final class RunQueueWaitClock: Sendable {
    private let kept = Mutex<(thread: pthread_t, descriptor: Int32)>((0, -1))

    deinit { kept.withLock { if $0.descriptor >= 0 { close($0.descriptor) } } }

    /// The wait since an earlier `now()`; 0 when either reading failed.
    func since(_ earlier: UInt64) -> UInt64 {
        let later = now()
        return earlier > 0 && later >= earlier ? later - earlier : 0
    }

    func now() -> UInt64 {
        let thread = pthread_self()
        return kept.withLock { kept -> UInt64 in
            if kept.descriptor < 0 || pthread_equal(kept.thread, thread) == 0 {
                if kept.descriptor >= 0 { close(kept.descriptor) }
                kept = (thread, open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC))
            }
            guard kept.descriptor >= 0 else { return 0 }
            let descriptor = kept.descriptor
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 96) { text -> UInt64 in
                var count = -1
                repeat { count = pread(descriptor, text.baseAddress, text.count, 0) } while count < 0 && errno == EINTR
                return Self.secondField(UnsafeMutableBufferPointer(rebasing: text.prefix(max(count, 0))))
            }
        }
    }

    /// "on-CPU run-queue-wait timeslices\n" → run-queue-wait; 0 unless it is 1 to 19 digits (no overflow).
    static func secondField(_ text: UnsafeMutableBufferPointer<UInt8>) -> UInt64 {
        var field = 0, value: UInt64 = 0, digits = 0
        for byte in text {
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") {
                if field == 1 { return value }
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
