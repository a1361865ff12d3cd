import Glibc
import Synchronization
import SystemPackage
import Frames

/// Raw frames from a file or a pipe (`-` is stdin), read as fast as the pipeline
/// takes them, so `ffmpeg … -f rawvideo - | camrec --input - …` works.
public final class RawFrameSource: FrameSource, Sendable {
    public var isLive: Bool { false }
    public let frameSize: FrameSize
    public let framesPerSecond: Double
    public let pixelFormat: PixelFormat
    public let path: String
    public var summary: String {
        "raw \(pixelFormat) \(frameSize) @ \(formatRate(framesPerSecond)) fps from \(path == "-" ? "stdin" : path)"
    }

    private let descriptor: FileDescriptor
    private let ownsDescriptor: Bool
    /// Bytes of one frame in the input.
    public let frameBytes: Int
    /// A YUYV or UYVY frame is read and converted this many rows at a time (even: each chroma row
    /// needs its two), straight into the pool buffer; other formats are read whole into `staging`.
    static let stripRows = 32
    private let stripBytes: Int?
    private let frameInterval: UInt64
    /// What `stop()` and the readers of `statistics` share with the capture thread.
    private let state = Mutex(State())
    private struct State {
        var statistics = SourceStatistics()
        var end: SourceEnd?
        var trailingBytes = 0
        var pool: PixelBufferPool?
    }
    /// Seen at every frame without a lock.
    private let stopped = Atomic(false)
    /// The capture thread's own: only `nextFrame` takes this lock (the one a frame took to see a stop
    /// is now `stopped`), so it is never contended, even while a read from a pipe waits.
    private let reading: Mutex<Reading>
    private struct Reading {
        /// A strip of a packed frame (120 KiB at 1920 wide), or a whole planar frame.
        let staging: UnsafeMutableRawBufferPointer
        var pool: PixelBufferPool?
        var sequence: UInt64 = 0
    }

    public var statistics: SourceStatistics { state.withLock { $0.statistics } }
    public var end: SourceEnd? { state.withLock { $0.end } }
    /// Bytes at the end of the input that did not make a whole frame.
    public var trailingBytes: Int { state.withLock { $0.trailingBytes } }

    public init(path: String, format: PixelFormat, size: FrameSize, fps: Double) throws {
        self.path = path
        pixelFormat = format
        frameSize = size
        framesPerSecond = fps
        frameInterval = UInt64(1_000_000_000 / fps)
        frameBytes = format.packedFrameSize(width: size.width, height: size.height)
        let input = try InputFile(path: path, kind: "a raw-frame file")
        descriptor = input.descriptor
        ownsDescriptor = input.ownsDescriptor
        let packedRowBytes = (size.width + 1) / 2 * 4
        stripBytes = format.isEncoderNative ? nil : packedRowBytes * min(Self.stripRows, size.height)
        reading = Mutex(Reading(staging: .allocate(byteCount: stripBytes ?? frameBytes, alignment: 64)))
    }

    deinit {
        reading.withLock { $0.staging.deallocate() }
        if ownsDescriptor { try? descriptor.close() }
    }

    public func start(pool: PixelBufferPool) throws {
        state.withLock { $0.pool = pool }
        reading.withLock { $0.pool = pool }
    }

    public func stop() {
        stopped.store(true, ordering: .relaxed)
        state.withLock { $0.pool }?.close()
    }

    public func nextFrame() throws -> PixelBuffer? {
        try reading.withLock { try nextFrame(&$0) }
    }

    private func nextFrame(_ reading: inout Reading) throws -> PixelBuffer? {
        guard let pool = reading.pool else { preconditionFailure("start(pool:) first") }
        if stopped.load(ordering: .relaxed) { return finish(.finished) }
        let staging = reading.staging, sequence = reading.sequence
        let buffer: PixelBuffer
        if let stripBytes {
            // A file source waits for the encoder rather than dropping: nothing is lost.
            guard let taken = pool.take() else { return finish(.finished) }
            buffer = taken
            let rowBytes = stripBytes / min(Self.stripRows, frameSize.height)
            var row = 0, read = 0
            while row < frameSize.height {
                let rows = min(Self.stripRows, frameSize.height - row)
                let got: Int
                do {
                    got = try readFully(UnsafeMutableRawBufferPointer(rebasing: staging[0..<(rows * rowBytes)]))
                } catch {
                    buffer.recycle()
                    throw error
                }
                read += got
                if got < rows * rowBytes {
                    buffer.recycle()
                    return try endOfInput(afterReading: read, frames: sequence)
                }
                FrameConverter.convertStrip(packed: pixelFormat, base: UnsafeRawPointer(staging.baseAddress!), rows: rows,
                                            into: buffer, firstRow: row)
                row += rows
            }
        } else {
            let got = try readFully(staging)
            if got < frameBytes { return try endOfInput(afterReading: got, frames: sequence) }
            guard let taken = pool.take() else { return finish(.finished) }
            buffer = taken
            let image = FrameConverter.SourceImage.packed(format: pixelFormat, width: frameSize.width,
                                                          height: frameSize.height, base: UnsafeRawPointer(staging.baseAddress!))
            FrameConverter.convert(image, into: buffer)
        }
        buffer.sequence = sequence
        buffer.presentationTimeNanoseconds = presentationTime(of: sequence, fps: framesPerSecond)
        buffer.captureTimeNanoseconds = MonotonicClock.now()
        reading.sequence += 1
        state.withLock { $0.statistics.delivered += 1 }
        return buffer
    }

    /// The input ended `read` bytes into a frame after `frames` whole ones: at a frame boundary after a
    /// frame, the end; before the first whole frame, a one-line error; mid-frame, the end with those bytes
    /// counted as trailing.
    private func endOfInput(afterReading read: Int, frames: UInt64) throws -> PixelBuffer? {
        if read == 0 && frames > 0 { return finish(.finished) }
        if frames == 0 {
            throw CaptureError(.invalidInput, "input \(path == "-" ? "stdin" : path) holds \(read) bytes, less than one "
                + "\(pixelFormat) \(frameSize) frame (\(frameBytes) bytes); check --size and --input-format")
        }
        state.withLock { $0.trailingBytes = read }
        return finish(.finished)
    }

    private func finish(_ reason: SourceEnd) -> PixelBuffer? {
        state.withLock { if $0.end == nil { $0.end = reason } }
        return nil
    }

    /// Reads until the buffer is full or the input ends; pipes deliver frames in pieces.
    private func readFully(_ buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var total = 0
        while total < buffer.count {
            let n: Int
            do {
                n = try descriptor.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...]), retryOnInterrupt: true)
            } catch let error as Errno {
                throw CaptureError(.invalidInput, "reading \(path == "-" ? "stdin" : path) failed: \(error)")
            }
            if n == 0 { break }
            total += n
        }
        return total
    }
}
