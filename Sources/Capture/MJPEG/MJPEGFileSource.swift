import Glibc
import Synchronization
import SystemPackage
import Frames

/// `--input FILE --input-format mjpeg`: a file (or stdin) of concatenated JPEGs, as ffmpeg's `-f mjpeg`
/// writes them and an MJPEG camera delivers them, decoded by the camera's path (`MJPEGDecoder`) as fast
/// as the encoder takes them: an MJPEG camera's work with no camera, for benchmarks and tests.
///
/// Each JPEG is found by walking its markers (the segments' lengths up to the scan, then the scan's
/// bytes to the marker after it), so a JPEG's bytes may hold FF D9 inside a segment. The size is the
/// first JPEG's (its SOF), or `--size`'s, which must agree. A JPEG that does not decode is dropped and
/// counted as errored, as a camera's would be.
public final class MJPEGFileSource: FrameSource, Sendable {
    public var isLive: Bool { false }
    public let frameSize: FrameSize
    public let framesPerSecond: Double
    public let path: String
    public var summary: String { "MJPEG \(frameSize) @ \(formatRate(framesPerSecond)) fps from \(path == "-" ? "stdin" : path)" }

    private let descriptor: FileDescriptor
    private let ownsDescriptor: Bool
    /// What `stop()` and the readers of `statistics` share with the capture thread.
    private let state = Mutex(State())
    private struct State {
        var statistics = SourceStatistics()
        var end: SourceEnd?
        var pool: PixelBufferPool?
    }
    /// Seen at every frame without a lock.
    private let stopped = Atomic(false)
    /// The capture thread's own: only `nextFrame` (and `deinit`) takes this lock (the one a frame took
    /// to see a stop is now `stopped`), so it is never contended, even while a read from a pipe waits.
    private let reading: Mutex<Reading>
    private struct Reading {
        let decoder: MJPEGDecoder
        /// Bytes read and not yet used: `pending` of them from `start`; grown only for a larger JPEG.
        var buffer: UnsafeMutableRawBufferPointer
        var start: Int
        var pending: Int
        var atEnd: Bool
        var pool: PixelBufferPool?
        var sequence: UInt64 = 0
    }

    public var statistics: SourceStatistics { state.withLock { $0.statistics } }
    public var end: SourceEnd? { state.withLock { $0.end } }

    public init(path: String, size: FrameSize?, fps: Double) throws {
        self.path = path
        framesPerSecond = fps
        let input = try InputFile(path: path, kind: "a file of JPEGs")
        descriptor = input.descriptor
        ownsDescriptor = input.ownsDescriptor
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        var (start, pending, atEnd) = (0, 0, false)
        // The first JPEG says the size.
        let first: Range<Int>?
        do {
            first = try Self.nextJPEG(in: &buffer, start: &start, pending: &pending, atEnd: &atEnd, descriptor: input.descriptor, path: path)
        } catch {
            buffer.deallocate()
            if ownsDescriptor { try? descriptor.close() }
            throw error
        }
        guard let first, let found = Self.frameSize(UnsafeRawBufferPointer(rebasing: buffer[first])) else {
            buffer.deallocate()
            if ownsDescriptor { try? descriptor.close() }
            throw CaptureError(.invalidInput, "input \(path == "-" ? "stdin" : path) does not start with a JPEG that says its size "
                               + "(--input-format mjpeg reads concatenated JPEGs, as ffmpeg -f mjpeg writes them)")
        }
        if let size, size != found {
            buffer.deallocate()
            if ownsDescriptor { try? descriptor.close() }
            throw CaptureError(.invalidInput, "the JPEGs of \(path) are \(found), not the \(size) given with --size")
        }
        frameSize = found
        // Keep the first JPEG for nextFrame: step back to its start.
        start = first.lowerBound
        pending += first.count
        let decoder: MJPEGDecoder
        do {
            decoder = try MJPEGDecoder(frameSize: found)
        } catch {
            buffer.deallocate()
            if ownsDescriptor { try? descriptor.close() }
            throw error
        }
        reading = Mutex(Reading(decoder: decoder, buffer: buffer, start: start, pending: pending, atEnd: atEnd))
    }

    deinit {
        reading.withLock { $0.buffer.deallocate() }
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
        while true {
            if stopped.load(ordering: .relaxed) { return finish(.finished) }
            guard let range = try Self.nextJPEG(in: &reading.buffer, start: &reading.start, pending: &reading.pending,
                                                atEnd: &reading.atEnd, descriptor: descriptor, path: path, damaged: countDamaged) else {
                return finish(.finished)
            }
            // A file source waits for the encoder rather than dropping: nothing is lost.
            guard let out = pool.take() else { return finish(.finished) }
            do {
                try reading.decoder.decode(UnsafeRawBufferPointer(rebasing: reading.buffer[range]), into: out)
            } catch {
                out.recycle()
                state.withLock {
                    $0.statistics.dropped += 1
                    $0.statistics.errored += 1
                }
                continue
            }
            out.sequence = reading.sequence
            out.presentationTimeNanoseconds = presentationTime(of: reading.sequence, fps: framesPerSecond)
            out.captureTimeNanoseconds = MonotonicClock.now()
            reading.sequence += 1
            let written = UInt64(out.planes.reduce(0) { $0 + $1.width * $1.height })
            state.withLock {
                $0.statistics.delivered += 1
                $0.statistics.bytesWrittenByCPU += written
            }
            return out
        }
    }

    /// Bytes that looked like the start of a JPEG and were not one: a picture lost, counted.
    private func countDamaged() {
        state.withLock {
            $0.statistics.dropped += 1
            $0.statistics.errored += 1
        }
    }

    private func finish(_ reason: SourceEnd) -> PixelBuffer? {
        state.withLock { if $0.end == nil { $0.end = reason } }
        return nil
    }

    /// The next JPEG's bytes within `buffer` (valid until the next call), nil at the end of the input.
    /// Bytes before a start-of-image marker are skipped; a JPEG cut short by the end of the input, or
    /// damaged, is dropped and counted (`damaged`).
    static func nextJPEG(in buffer: inout UnsafeMutableRawBufferPointer, start: inout Int, pending: inout Int, atEnd: inout Bool,
                         descriptor: FileDescriptor, path: String, damaged: (() -> Void)? = nil) throws -> Range<Int>? {
        while true {
            switch scan(UnsafeRawBufferPointer(rebasing: buffer[start..<(start + pending)])) {
            case .jpeg(let offset, let length):
                let range = (start + offset)..<(start + offset + length)
                start += offset + length
                pending -= offset + length
                return range
            case .damaged(let offset):
                // Not a JPEG after all (a false start-of-image in damaged data, or one that never ends
                // within `maximumJPEGBytes`): look for the next one past its marker.
                start += offset + 2
                pending -= offset + 2
                damaged?()
                continue
            case .needMore(let offset):
                // What comes before a start-of-image is no picture's: let it go, so garbage never piles up.
                start += offset
                pending -= offset
                if pending >= maximumJPEGBytes {
                    start += 2
                    pending -= 2
                    damaged?()
                    continue
                }
            }
            if atEnd {
                // A start-of-image is left: the input ended inside a JPEG, a picture lost.
                if pending >= 2 { damaged?() }
                return nil
            }
            // More bytes: move what is pending to the front, grow if full (up to the bound), read.
            if start > 0 {
                if pending > 0 { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: pending) }
                start = 0
            }
            if pending == buffer.count {
                let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: buffer.count * 2, alignment: 64)
                larger.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: pending)
                buffer.deallocate()
                buffer = larger
            }
            let n: Int
            do {
                n = try descriptor.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[pending...]), retryOnInterrupt: true)
            } catch let error as Errno {
                throw CaptureError(.invalidInput, "reading \(path == "-" ? "stdin" : path) failed: \(error)")
            }
            if n == 0 { atEnd = true }
            pending += n
        }
    }

    /// The most one JPEG may take (an 8K picture at high quality is about 20 MB): the read buffer's bound.
    static let maximumJPEGBytes = 64 << 20

    enum Scan: Equatable {
        /// A whole JPEG `length` bytes long at `offset`.
        case jpeg(offset: Int, length: Int)
        /// A start-of-image at `offset` (or none: `offset` is where one could still begin) whose end is
        /// not in the bytes yet.
        case needMore(offset: Int)
        /// A start-of-image at `offset` followed by what no JPEG holds.
        case damaged(offset: Int)
    }

    /// Where the first JPEG in `bytes` is, whole, cut short or damaged.
    static func scan(_ bytes: UnsafeRawBufferPointer) -> Scan {
        var i = 0
        while i + 1 < bytes.count, !(bytes[i] == 0xFF && bytes[i + 1] == 0xD8) { i += 1 }
        guard i + 1 < bytes.count else { return .needMore(offset: i) }
        var p = i + 2
        // Segments with lengths, up to and including SOS.
        while true {
            while p < bytes.count && bytes[p] == 0xFF && p + 1 < bytes.count && bytes[p + 1] == 0xFF { p += 1 }
            guard p + 3 < bytes.count else { return .needMore(offset: i) }
            guard bytes[p] == 0xFF else { return .damaged(offset: i) }
            let marker = bytes[p + 1]
            if marker == 0xD9 { return .jpeg(offset: i, length: p + 2 - i) }
            if (0xD0...0xD7).contains(marker) || marker == 0x01 { p += 2; continue }
            let length = Int(bytes[p + 2]) << 8 | Int(bytes[p + 3])
            guard length >= 2 else { return .damaged(offset: i) }
            p += 2 + length
            if marker == 0xDA { break }
        }
        // Entropy-coded data: runs to the first marker that is neither a stuffed byte nor a restart.
        while true {
            while p + 1 < bytes.count, !(bytes[p] == 0xFF && bytes[p + 1] != 0x00 && !(0xD0...0xD7).contains(bytes[p + 1])) { p += 1 }
            guard p + 1 < bytes.count else { return .needMore(offset: i) }
            if bytes[p + 1] == 0xD9 { return .jpeg(offset: i, length: p + 2 - i) }
            // Another scan (progressive JPEG) or a table between scans: walk its segment, then its data.
            guard p + 3 < bytes.count else { return .needMore(offset: i) }
            let length = Int(bytes[p + 2]) << 8 | Int(bytes[p + 3])
            guard length >= 2 else { return .damaged(offset: i) }
            p += 2 + length
        }
    }

    /// Width and height from a JPEG's start-of-frame segment.
    static func frameSize(_ jpeg: UnsafeRawBufferPointer) -> FrameSize? {
        var p = 2
        while p + 8 < jpeg.count, jpeg[p] == 0xFF {
            let marker = jpeg[p + 1]
            let length = Int(jpeg[p + 2]) << 8 | Int(jpeg[p + 3])
            if (0xC0...0xCF).contains(marker) && marker != 0xC4 && marker != 0xC8 && marker != 0xCC {
                let height = Int(jpeg[p + 5]) << 8 | Int(jpeg[p + 6])
                let width = Int(jpeg[p + 7]) << 8 | Int(jpeg[p + 8])
                return width > 0 && height > 0 ? FrameSize(width: width, height: height) : nil
            }
            p += 2 + length
        }
        return nil
    }
}
