import CV4L2
import Glibc
import SystemPackage
import Frames

/// The camera's ring of buffers: requested and queued at start (USERPTR into the pool, or mmap),
/// queued again after each frame, released at the end.
extension V4L2CaptureSource {
    public func start(pool: PixelBufferPool) throws {
        try stream.withLock { try start(pool: pool, in: $0) }
    }

    private func start(pool: PixelBufferPool, in stream: Stream) throws {
        precondition(pool.width == frameSize.width && pool.height == frameSize.height, "pool size differs from the camera's")
        stream.pool = pool
        let mode: MemoryMode
        if zeroCopyCandidate && pool.format == .nv12 && pool.hasStableMemory, try startZeroCopy(pool, stream) {
            mode = .zeroCopy
        } else {
            try startMapped(stream)
            mode = deliversCompressedVideo ? .compressed : stream.jpegDecoder != nil ? .decoded
                : stream.libraryConverter != nil ? .libraryConverted : .converted
        }
        state.withLock { $0.memoryMode = mode }
        var type = Int32(bitPattern: bufferType.rawValue)
        do {
            try device.ioctl(.streamOn, &type)
        } catch {
            throw Self.busyOr(error, path: path, CaptureError(.deviceFailed,
                                                              "\(path) failed to start streaming (\(error))"))
        }
        stream.streaming = true
        stream.lastSignOfLife = MonotonicClock.now()
    }

    /// Lends the camera a ring of pool buffers to write into. False (and nothing held)
    /// when the pool's layout differs from the camera's or the driver refuses USERPTR.
    func startZeroCopy(_ pool: PixelBufferPool, _ stream: Stream) throws(CaptureError) -> Bool {
        var ring: [PixelBuffer] = []
        while ring.count < Int(Self.ringSize), let buffer = pool.tryTake() { ring.append(buffer) }
        func giveUp() -> Bool {
            ring.forEach { $0.recycle() }
            stream.slots = []
            stream.memory = V4L2_MEMORY_MMAP
            return false
        }
        guard ring.count == Int(Self.ringSize), let sample = ring.first, fitsCameraLayout(sample) else { return giveUp() }

        let count: UInt32
        do {
            count = try requestRing(V4L2_MEMORY_USERPTR, stream)
        } catch where error.errno.rawValue == EBUSY || error.errno.rawValue == ENODEV {
            ring.forEach { $0.recycle() }   // none was lent: the pool gets them all back
            throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot allocate capture buffers (\(error))"))
        } catch {
            return giveUp()   // no USERPTR here: the mmap path it is
        }
        guard count >= 2 else {
            releaseBuffers(stream)
            return giveUp()
        }
        while ring.count > Int(count) { ring.removeLast().recycle() }
        stream.slots = ring
        for index in 0..<count {
            do {
                try queueAtStart(index, stream)
            } catch where error.errno.rawValue == ENODEV {
                throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot queue capture buffer (\(error))"))
            } catch {
                // EFAULT/EINVAL: a driver that needs contiguous memory can't use pool buffers.
                releaseBuffers(stream)
                return giveUp()
            }
        }
        return true
    }

    /// `VIDIOC_REQBUFS` for a ring of `memory` buffers; returns how many the driver gave.
    func requestRing(_ memory: v4l2_memory, _ stream: Stream) throws(V4L2IoctlError) -> UInt32 {
        var request = v4l2_requestbuffers()
        request.count = Self.ringSize
        request.type = bufferType.rawValue
        request.memory = memory.rawValue
        try device.ioctl(.requestBuffers, &request)
        stream.memory = memory
        stream.buffersRequested = true
        return request.count
    }

    /// Queues ring slot `index` before streaming starts, once more on failure: a transient
    /// refusal (vivid's inject_vidioc_qbuf_error) is not fatal.
    func queueAtStart(_ index: UInt32, _ stream: Stream) throws(V4L2IoctlError) {
        var buffer = queueableBuffer(index: index, stream)
        do { try device.ioctl(.queueBuffer, &buffer) } catch where error.errno.rawValue != ENODEV {
            buffer = queueableBuffer(index: index, stream)
            try device.ioctl(.queueBuffer, &buffer)
        }
    }

    /// Whether a pool buffer has the very layout the camera writes: same strides and, for
    /// a single-buffer format, the chroma plane where V4L2 puts it.
    func fitsCameraLayout(_ buffer: PixelBuffer) -> Bool {
        guard buffer.planes.count == 2 else { return false }
        if let geometry {
            let chromaOffset = buffer.planes[1].base - buffer.planes[0].base
            return geometry.strides == [buffer.planes[0].stride, buffer.planes[1].stride]
                && geometry.offsets == [0, chromaOffset] && geometry.byteCount <= buffer.byteCount
        }
        return bytesPerLine == [buffer.planes[0].stride, buffer.planes[1].stride]
    }

    /// mmap streaming: the driver's own buffers, converted into pool buffers as they come.
    func startMapped(_ stream: Stream) throws {
        let count: UInt32
        do {
            count = try requestRing(V4L2_MEMORY_MMAP, stream)
        } catch {
            throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot allocate capture buffers (\(error))"))
        }
        guard count >= 2 else {
            throw CaptureError(.deviceFailed, "\(path) gave only \(count) capture buffer(s); camrec needs at least 2")
        }
        for index in 0..<count {
            var buffer = emptyBuffer(index: index, stream)
            do {
                try device.ioctl(.queryBuffer, &buffer)
            } catch {
                throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot query capture buffer \(index) (\(error))"))
            }
            var planes: [(base: UnsafeMutableRawPointer, length: Int)] = []
            let regions: [(offset: Int, length: Int)] = multiplanar
                ? (0..<Int(buffer.length)).map { (Int(stream.planeScratch[$0].m.mem_offset), Int(stream.planeScratch[$0].length)) }
                : [(Int(buffer.m.offset), Int(buffer.length))]
            for region in regions {
                let (base, error) = system.mmap(length: region.length, fd: device.fd, offset: region.offset)
                guard let base else {
                    throw CaptureError(.deviceFailed, "\(path): cannot map capture buffer \(index): \(Errno(rawValue: error))")
                }
                planes.append((base, region.length))
            }
            stream.mappings.append(planes)
        }
        for index in 0..<count {
            do {
                try queueAtStart(index, stream)
            } catch {
                throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot queue capture buffer (\(error))"))
            }
        }
    }

    public func stop() {
        // The first stop wakes a `nextFrame` waiting in poll; it sees `stopped` when it looks again.
        if !stopped.exchange(true, ordering: .acquiringAndReleasing) {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    /// A `v4l2_buffer` for `index`, pointing at the plane scratch array when multi-planar.
    func emptyBuffer(index: UInt32 = 0, _ stream: Stream) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = index
        buffer.type = bufferType.rawValue
        buffer.memory = stream.memory.rawValue
        if multiplanar {
            stream.planeScratch.update(repeating: v4l2_plane(), count: Int(VIDEO_MAX_PLANES))
            buffer.m.planes = stream.planeScratch
            buffer.length = UInt32(VIDEO_MAX_PLANES)
        }
        return buffer
    }

    /// The buffer to hand the driver for ring slot `index`: with USERPTR, the memory of the
    /// pool buffer in that slot.
    func queueableBuffer(index: UInt32, _ stream: Stream) -> v4l2_buffer {
        var buffer = emptyBuffer(index: index, stream)
        guard stream.memory == V4L2_MEMORY_USERPTR, let pixels = stream.slots[Int(index)] else { return buffer }
        if multiplanar {
            for (p, plane) in pixels.planes.prefix(2).enumerated() {
                stream.planeScratch[p].m.userptr = UInt(bitPattern: plane.base)
                stream.planeScratch[p].length = UInt32(plane.stride * plane.height)
            }
            buffer.length = 2
        } else {
            buffer.m.userptr = UInt(bitPattern: pixels.planes[0].base)
            buffer.length = UInt32(pixels.byteCount)
        }
        return buffer
    }


    func requeue(_ index: UInt32, _ stream: Stream) {
        var buffer = queueableBuffer(index: index, stream)
        do {
            try device.ioctl(.queueBuffer, &buffer)
        } catch {
            // Kept aside and retried: vivid's inject_vidioc_qbuf_error, like a real
            // driver's transient failure, refuses one QBUF and takes the next.
            stream.unqueued.append(index)
            stream.lastQueueError = error
        }
    }

    /// Retries buffers the driver refused. Three refusals in a row end the recording:
    /// the ring would run dry and the camera stall.
    func requeueRefused(_ stream: Stream) -> SourceEnd? {
        guard !stream.unqueued.isEmpty else { return nil }
        if let error = stream.lastQueueError, error.errno.rawValue == ENODEV {
            return .deviceLost(lostMessage(error))
        }
        let pending = stream.unqueued
        stream.unqueued = []
        for index in pending { requeue(index, stream) }
        let taken = UInt64(pending.count - stream.unqueued.count)
        state.withLock { $0.statistics.requeuedAfterRefusal += taken }
        if stream.unqueued.isEmpty {
            stream.refusedQueueing = 0
            return nil
        }
        stream.refusedQueueing += 1
        if stream.refusedQueueing >= 3, let error = stream.lastQueueError {
            return .deviceLost("\(path) keeps refusing capture buffers (\(error))")
        }
        return nil
    }


    /// Stops streaming and releases the buffers and the node (and with it the lock).
    func teardown(_ stream: Stream) {
        guard !stream.tornDown else { return }
        stream.tornDown = true
        if stream.streaming {
            var type = Int32(bitPattern: bufferType.rawValue)
            try? device.ioctl(.streamOff, &type)
            stream.streaming = false
        }
        for buffer in stream.mappings {
            for plane in buffer { _ = system.munmap(plane.base, length: plane.length) }
        }
        stream.mappings = []
        releaseBuffers(stream)
        // After STREAMOFF the camera holds none of them: the ring goes back to the pool.
        for case let buffer? in stream.slots { buffer.recycle() }
        stream.slots = []
        device.close()
    }

    /// `VIDIOC_REQBUFS` with a count of 0: the driver lets go of the ring.
    func releaseBuffers(_ stream: Stream) {
        guard stream.buffersRequested else { return }
        stream.buffersRequested = false
        var release = v4l2_requestbuffers()
        release.type = bufferType.rawValue
        release.memory = stream.memory.rawValue
        try? device.ioctl(.requestBuffers, &release)
    }
}
