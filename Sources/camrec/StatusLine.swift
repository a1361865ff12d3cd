import Frames
import Glibc
import Threading
import Synchronization

/// One line on a terminal, redrawn in place twice a second. It measures frame and bit rates from
/// the counters `sample` returns; `describe` turns them into the line (the recorder shows drops,
/// `receive` shows decode errors and reconnects).
final class StatusLine: Sendable {
    struct Rates {
        var framesPerSecond: Double
        var megabitsPerSecond: Double
        var elapsedSeconds: Double
    }

    private let sample: @Sendable () -> (frames: Int, bytes: Int)
    private let describe: @Sendable (Rates) -> String
    /// Opened by `stop`: the redraw's wait ends at once, not up to half a second later.
    private let stopped = Latch()
    private let worker = Mutex<WorkerThread?>(nil)

    init(sample: @escaping @Sendable () -> (frames: Int, bytes: Int), describe: @escaping @Sendable (Rates) -> String) {
        self.sample = sample
        self.describe = describe
    }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    func start() {
        let worker = WorkerThread(name: "status") { [unowned self] in
            let start = Double(MonotonicClock.now()) / 1e9
            var last = (frames: 0, bytes: 0)
            var lastTime = start
            while !self.stopped.wait(nanoseconds: 500_000_000) {
                let now = Double(MonotonicClock.now()) / 1e9
                let current = self.sample()
                let dt = max(0.001, now - lastTime)
                let rates = Rates(framesPerSecond: Double(current.frames - last.frames) / dt,
                                  megabitsPerSecond: Double(current.bytes - last.bytes) * 8 / dt / 1e6,
                                  elapsedSeconds: now - start)
                last = current
                lastTime = now
                writeStandardError("\r\u{1B}[2K" + self.describe(rates))
            }
            writeStandardError("\r\u{1B}[2K")
        }
        self.worker.withLock { $0 = worker }
        worker.start()
    }

    func stop() {
        stopped.open()
        worker.withLock { $0.take() }?.join()
    }
}

