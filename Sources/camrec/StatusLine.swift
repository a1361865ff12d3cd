import Glibc
import Pipeline
import Recorder
import Synchronization

/// One line on a terminal, redrawn in place twice a second: frames, fps, bitrate, drops.
final class StatusLine: @unchecked Sendable {
    private let recorder: Recorder
    private let done = Atomic<Bool>(false)
    private var worker: WorkerThread?

    init(recorder: Recorder) {
        self.recorder = recorder
    }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    func start() {
        let worker = WorkerThread(name: "status") { [unowned self] in
            let start = Date.monotonicSeconds()
            var lastFrames = 0
            var lastBytes = 0
            var lastTime = start
            while !self.done.load(ordering: .relaxed) {
                usleep(500_000)
                let now = Date.monotonicSeconds()
                let p = self.recorder.progress
                let dt = max(0.001, now - lastTime)
                let fps = Double(p.frames - lastFrames) / dt
                let mbps = Double(p.bytes - lastBytes) * 8 / dt / 1e6
                lastFrames = p.frames
                lastBytes = p.bytes
                lastTime = now
                let text = "\r\u{1B}[2Kframes \(p.frames)  \(format(fps)) fps  \(format(mbps)) Mbit/s  dropped \(p.dropped)  "
                    + "\(format(now - start)) s"
                writeStandardError(text)
            }
            writeStandardError("\r\u{1B}[2K")
        }
        self.worker = worker
        worker.start()
    }

    func stop() {
        done.store(true, ordering: .relaxed)
        worker?.join()
    }
}

enum Date {
    static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

func format(_ value: Double, decimals: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int((value * scale).rounded())
    let whole = scaled / Int(scale)
    let fraction = abs(scaled % Int(scale))
    guard decimals > 0 else { return String(whole) }
    var f = String(fraction)
    while f.count < decimals { f = "0" + f }
    return "\(scaled < 0 && whole == 0 ? "-" : "")\(whole).\(f)"
}
