import Glibc
import NIOCore
import NIOPosix
import Synchronization

/// SwiftNIO's shared event loop threads (the RTSP server, the HTTP face, TCP outputs and listeners) run
/// at a lower priority than capture and encoding, so that on a busy machine sending to many clients does
/// not hold up a frame: when both want a core, the capture and encoder threads get it first. Per-thread
/// nice values, which need no privilege to raise; all of camrec's threads are in one process, so one
/// autogroup (or one cgroup), where nice orders them against each other.
public enum NetworkThreads {
    /// How much nicer than the thread that lowers them the event loop threads become (at most 19).
    /// Ten steps: when both are runnable on one core, a loop thread gets about a tenth of it.
    public static let nicer: CInt = 10
    private static let lowered = Atomic<Bool>(false)

    /// Lowers every event loop thread of the shared group once (later calls return at once); waits until
    /// each has done it. Call it only when the recording has a network face: it starts the group's threads.
    public static func yieldToCapture() {
        guard !lowered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        errno = 0
        let own = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let target = min(19, (errno == 0 ? own : 0) + nicer)
        for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
            try? loop.submit { lowerCurrentThread(to: target) }.wait()
        }
    }

    /// Sets the calling thread's nice value: on Linux a nice value is a thread's own, and PRIO_PROCESS with
    /// `who` 0 names the calling thread alone (setpriority(2), "Bugs").
    static func lowerCurrentThread(to nice: CInt) {
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
    }
}
