import Glibc
import Synchronization
import Frames
import SystemSupport

/// A built-in moving pattern paced in real time like a camera.
///
/// Every frame differs (a scrolling luma ramp, drifting colour bands and a
/// bouncing box), so P-frames carry real motion. With `.eventScene` the picture is
/// instead `--test-scene`'s still room with events (see `TestScene`). The frame's sequence number is
/// burned into the top-left corner as 32 blocks of 16x16 pixels, most significant
/// bit first, white for 1 and black for 0, between two white marker blocks; tests
/// read it back from decoded pictures to prove no frame was lost or repeated.
public final class TestPatternSource: FrameSource, Sendable {
    public static let counterBlockSize = 16
    public static let counterBits = 32
    /// Top-left corner of the counter strip (first marker block).
    public static let counterOrigin = (x: 16, y: 16)

    /// What the frames show.
    public enum Picture: Sendable {
        /// The moving pattern: every frame differs everywhere.
        case movingPattern
        /// A still room with noise; every 30 s an object crosses (10-15 s) and the lights are on (20-30 s).
        case eventScene
    }

    public let frameSize: FrameSize
    public let framesPerSecond: Double
    public let picture: Picture
    public var summary: String {
        "\(picture == .eventScene ? "test scene" : "test pattern") \(frameSize) @ \(formatRate(framesPerSecond)) fps"
    }

    /// What `stop()` and the readers of `statistics` share with the capture thread, and the frame
    /// counter the capture thread takes from it in the one lock a frame already took (to see a stop).
    private let state = Mutex(State())
    private struct State {
        var statistics = SourceStatistics()
        var end: SourceEnd?
        var stopped = false
        var pool: PixelBufferPool?
        var startTime: UInt64 = 0
        var nextSequence: UInt64 = 0
    }

    public var statistics: SourceStatistics { state.withLock { $0.statistics } }
    public var end: SourceEnd? { state.withLock { $0.end } }

    private let frameInterval: UInt64
    private let pacedInRealTime: Bool
    /// A ramp twice as wide as the frame, so each row is one copy from an offset (empty for the scene).
    private let lumaRamp: [UInt8]
    private let chromaRamp: [UInt8]
    private let scene: TestScene?

    /// - Parameter realTime: pace frames at `fps` like a camera (false in benchmarks and tests
    ///   that want frames as fast as the encoder takes them).
    /// `--audio test` beside the pattern: the first frame of each second is white below the middle
    /// (the counter stays readable), where the test tone has its burst.
    public let marksEachSecond: Bool

    /// - Parameter marksEachSecond: make the first frame of each second white in its lower half.
    public init(size: FrameSize, fps: Double, realTime: Bool = true, picture: Picture = .movingPattern,
                marksEachSecond: Bool = false) {
        frameSize = size
        framesPerSecond = fps
        self.picture = picture
        self.marksEachSecond = marksEachSecond
        frameInterval = UInt64(1_000_000_000 / fps)
        pacedInRealTime = realTime
        if picture == .eventScene {
            // The scene draws its own picture: the moving pattern's ramps are not needed.
            scene = TestScene(size: size, fps: fps)
            lumaRamp = []
            chromaRamp = []
            return
        }
        scene = nil
        lumaRamp = (0..<(size.width + 512)).map { i in
            let phase = i & 511
            let tri = phase < 256 ? phase : 511 - phase
            return UInt8(16 + tri * 219 / 255)
        }
        let chromaWidth = (size.width + 1) / 2 * 2 + 1024
        chromaRamp = (0..<chromaWidth).map { i in
            let band = (i / 2 / 40) % 6
            let u: [UInt8] = [90, 160, 110, 200, 60, 128]
            let v: [UInt8] = [200, 90, 60, 128, 170, 110]
            return i % 2 == 0 ? u[band] : v[band]
        }
    }

    public func start(pool: PixelBufferPool) throws {
        let now = MonotonicClock.now()
        state.withLock {
            $0.pool = pool
            $0.startTime = now
        }
    }

    public func stop() {
        let pool = state.withLock {
            $0.stopped = true
            return $0.pool
        }
        pool?.close()
    }

    public func nextFrame() throws -> PixelBuffer? {
        while true {
            let next: (pool: PixelBufferPool, startTime: UInt64, sequence: UInt64)? = state.withLock {
                guard let pool = $0.pool else { preconditionFailure("start(pool:) first") }
                if $0.stopped {
                    if $0.end == nil { $0.end = .finished }
                    return nil
                }
                $0.nextSequence += 1
                return (pool, $0.startTime, $0.nextSequence - 1)
            }
            guard let (pool, startTime, sequence) = next else { return nil }
            let due = startTime + sequence * frameInterval
            if pacedInRealTime {
                let now = MonotonicClock.now()
                // A camera does not wait for a slow consumer: a frame whose time has
                // long passed is dropped, not delivered late.
                if now > due + 2 * frameInterval {
                    state.withLock { $0.statistics.dropped += 1 }
                    continue
                }
                MonotonicClock.sleep(until: due)
            }
            let buffer: PixelBuffer?
            if pacedInRealTime {
                buffer = pool.tryTake()
            } else {
                buffer = pool.take()
            }
            guard let buffer else {
                if pacedInRealTime && !state.withLock({ $0.stopped }) {
                    state.withLock {
                        $0.statistics.dropped += 1
                        $0.statistics.poolEmpty += 1
                    }
                    continue
                }
                state.withLock { if $0.end == nil { $0.end = .finished } }
                return nil
            }
            draw(frame: sequence, into: buffer)
            buffer.sequence = sequence
            buffer.captureTimeNanoseconds = pacedInRealTime ? MonotonicClock.now() : startTime + sequence * frameInterval
            buffer.presentationTimeNanoseconds = presentationTime(of: sequence, fps: framesPerSecond)
            state.withLock { $0.statistics.delivered += 1 }
            return buffer
        }
    }

    func draw(frame: UInt64, into buffer: PixelBuffer) {
        if let scene {
            scene.draw(frame: frame, into: buffer)
            drawCounter(frame, luma: buffer.planes[0])
            neutralChromaUnderCounter(buffer)
            return
        }
        let width = frameSize.width
        let height = frameSize.height
        let luma = buffer.planes[0]
        let shift = Int(frame % 512)
        lumaRamp.withUnsafeBufferPointer { ramp in
            for y in 0..<height {
                let offset = (shift * 3 + y) % 512
                (luma.base + y * luma.stride).update(from: ramp.baseAddress! + offset, count: width)
            }
        }
        // A bouncing box, so there is motion that is not a plain scroll.
        let box = max(8, min(width, height) / 6)
        let rangeX = max(1, width - box)
        let rangeY = max(1, height - box)
        let t = Int(frame)
        let bx = bounce(t * 7, rangeX)
        let by = bounce(t * 5, rangeY)
        for y in by..<min(height, by + box) {
            (luma.base + y * luma.stride + bx).update(repeating: 235, count: min(box, width - bx))
        }
        drawCounter(frame, luma: luma)
        drawChroma(frame, buffer: buffer)
        if marksEachSecond && isFirstOfASecond(frame) { whitenLowerHalf(buffer) }
    }

    /// Whether frame `frame` is the first presented at or after a whole second.
    func isFirstOfASecond(_ frame: UInt64) -> Bool {
        let time = presentationTime(of: frame, fps: framesPerSecond)
        return frame == 0 || time / 1_000_000_000 != presentationTime(of: frame - 1, fps: framesPerSecond) / 1_000_000_000
    }

    private func whitenLowerHalf(_ buffer: PixelBuffer) {
        let luma = buffer.planes[0]
        for y in frameSize.height / 2..<frameSize.height {
            (luma.base + y * luma.stride).update(repeating: 235, count: frameSize.width)
        }
        // Neutral chroma below the middle: white, not a tinted band.
        for plane in buffer.planes.dropFirst() {
            let rows = plane.height
            for y in rows / 2..<rows {
                (plane.base + y * plane.stride).update(repeating: 128, count: plane.stride)
            }
        }
    }

    private func bounce(_ t: Int, _ range: Int) -> Int {
        let period = 2 * range
        let p = t % period
        return p < range ? p : period - p
    }

    private func drawCounter(_ frame: UInt64, luma: PixelBuffer.Plane) {
        let size = Self.counterBlockSize
        let (ox, oy) = Self.counterOrigin
        func block(_ index: Int, white: Bool) {
            let x0 = ox + index * size
            guard x0 + size <= luma.width, oy + size <= luma.height else { return }
            for y in oy..<(oy + size) {
                (luma.base + y * luma.stride + x0).update(repeating: white ? 235 : 16, count: size)
            }
        }
        block(0, white: true)
        for bit in 0..<Self.counterBits {
            block(1 + bit, white: (frame >> UInt64(Self.counterBits - 1 - bit)) & 1 == 1)
        }
        block(1 + Self.counterBits, white: true)
    }

    private func drawChroma(_ frame: UInt64, buffer: PixelBuffer) {
        let chromaHeight = (frameSize.height + 1) / 2
        let shift = Int(frame % 480) * 2
        chromaRamp.withUnsafeBufferPointer { ramp in
            switch buffer.format {
            case .nv12:
                let plane = buffer.planes[1]
                for y in 0..<chromaHeight {
                    (plane.base + y * plane.stride).update(from: ramp.baseAddress! + shift, count: plane.width)
                }
            case .i420:
                let u = buffer.planes[1], v = buffer.planes[2]
                for y in 0..<chromaHeight {
                    let du = u.base + y * u.stride
                    let dv = v.base + y * v.stride
                    for x in 0..<u.width {
                        du[x] = ramp[shift + 2 * x]
                        dv[x] = ramp[shift + 2 * x + 1]
                    }
                }
            case .yuyv, .uyvy:
                preconditionFailure("pool buffers are never packed 4:2:2")
            }
        }
        neutralChromaUnderCounter(buffer)
    }

    /// Neutral chroma under the counter so it reads as pure black and white.
    private func neutralChromaUnderCounter(_ buffer: PixelBuffer) {
        let chromaHeight = (frameSize.height + 1) / 2
        let size = Self.counterBlockSize
        let (ox, oy) = Self.counterOrigin
        let x0 = ox / 2, x1 = min((ox + (Self.counterBits + 2) * size) / 2, (frameSize.width + 1) / 2)
        let y0 = oy / 2, y1 = min((oy + size) / 2, chromaHeight)
        guard x1 > x0, y1 > y0 else { return }
        for y in y0..<y1 {
            for p in buffer.planes.dropFirst() {
                let samplesPerPixel = buffer.format == .nv12 ? 2 : 1
                (p.base + y * p.stride + x0 * samplesPerPixel).update(repeating: 128, count: (x1 - x0) * samplesPerPixel)
            }
        }
    }

    /// Reads the burned-in counter from a decoded luma plane; nil when the markers are not found.
    public static func readCounter(luma: UnsafePointer<UInt8>, stride: Int) -> UInt64? {
        let size = counterBlockSize
        let (ox, oy) = counterOrigin
        func isWhite(_ index: Int) -> Bool {
            let cx = ox + index * size + size / 2
            let cy = oy + size / 2
            return luma[cy * stride + cx] > 128
        }
        guard isWhite(0), isWhite(counterBits + 1) else { return nil }
        var value: UInt64 = 0
        for bit in 0..<counterBits { value = value << 1 | (isWhite(1 + bit) ? 1 : 0) }
        return value
    }
}

func formatRate(_ fps: Double) -> String {
    fps == fps.rounded() ? String(Int(fps)) : fps.decimalText(places: 2)
}
