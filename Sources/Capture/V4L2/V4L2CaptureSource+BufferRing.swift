import CV4L2
import Glibc
import SystemPackage
import Frames

/// The camera's ring of buffers: requested and queued at start (USERPTR into the pool, or mmap),
/// queued again after each frame, released at the end.
extension V4L2CaptureSource {
    public func start(pool: PixelBufferPool) throws {
        precondition(pool.width == frameSize.width && pool.height == frameSize.height, "pool size differs from the camera's")
        self.pool = pool
        if zeroCopyCandidate && pool.format == .nv12 && pool.hasStableMemory, try startZeroCopy(pool) {
            memoryMode = .zeroCopy
        } else {
            try startMapped()
            memoryMode = deliversCompressedVideo ? .compressed : jpegDecoder != nil ? .decoded
                : libraryConverter != nil ? .libraryConverted : .converted
        }
        var type = Int32(bitPattern: bufferType.rawValue)
        do {
            try device.ioctl(.streamOn, &type)
        } catch {
            throw Self.busyOr(error, path: path, CaptureError(.deviceFailed,
                                                              "\(path) failed to start streaming (\(error))"))
        }
        streaming = true
        lastSignOfLife = MonotonicClock.now()
    }

    /// Lends the camera a ring of pool buffers to write into. False (and nothing held)
    /// when the pool's layout differs from the camera's or the driver refuses USERPTR.
    func startZeroCopy(_ pool: PixelBufferPool) throws(CaptureError) -> Bool {
        var ring: [PixelBuffer] = []
        while ring.count < Int(Self.ringSize), let buffer = pool.tryTake() { ring.append(buffer) }
        func giveUp() -> Bool {
            ring.forEach { $0.recycle() }
            slots = []
            memory = V4L2_MEMORY_MMAP
            return false
        }
        guard ring.count == Int(Self.ringSize), let sample = ring.first, fitsCameraLayout(sample) else { return giveUp() }

        let count: UInt32
        do {
            count = try requestRing(V4L2_MEMORY_USERPTR)
        } catch where error.errno.rawValue == EBUSY || error.errno.rawValue == ENODEV {
            ring.forEach { $0.recycle() }   // none was lent: the pool gets them all back
            throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot allocate capture buffers (\(error))"))
        } catch {
            return giveUp()   // no USERPTR here: the mmap path it is
        }
        guard count >= 2 else {
            releaseBuffers()
            return giveUp()
        }
        while ring.count > Int(count) { ring.removeLast().recycle() }
        slots = ring
        for index in 0..<count {
            do {
                try queueAtStart(index)
            } catch where error.errno.rawValue == ENODEV {
                throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot queue capture buffer (\(error))"))
            } catch {
                // EFAULT/EINVAL: a driver that needs contiguous memory can't use pool buffers.
                releaseBuffers()
                return giveUp()
            }
        }
        return true
    }

    /// `VIDIOC_REQBUFS` for a ring of `memory` buffers; returns how many the driver gave.
    func requestRing(_ memory: v4l2_memory) throws(V4L2IoctlError) -> UInt32 {
        var request = v4l2_requestbuffers()
        request.count = Self.ringSize
        request.type = bufferType.rawValue
        request.memory = memory.rawValue
        try device.ioctl(.requestBuffers, &request)
        self.memory = memory
        buffersRequested = true
        return request.count
    }

    /// Queues ring slot `index` before streaming starts, once more on failure: a transient
    /// refusal (vivid's inject_vidioc_qbuf_error) is not fatal.
    func queueAtStart(_ index: UInt32) throws(V4L2IoctlError) {
        var buffer = queueableBuffer(index: index)
        do { try device.ioctl(.queueBuffer, &buffer) } catch where error.errno.rawValue != ENODEV {
            buffer = queueableBuffer(index: index)
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
    func startMapped() throws {
        let count: UInt32
        do {
            count = try requestRing(V4L2_MEMORY_MMAP)
        } catch {
            throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot allocate capture buffers (\(error))"))
        }
        guard count >= 2 else {
            throw CaptureError(.deviceFailed, "\(path) gave only \(count) capture buffer(s); camrec needs at least 2")
        }
        for index in 0..<count {
            var buffer = emptyBuffer(index: index)
            do {
                try device.ioctl(.queryBuffer, &buffer)
            } catch {
                throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot query capture buffer \(index) (\(error))"))
            }
            var planes: [(base: UnsafeMutableRawPointer, length: Int)] = []
            let regions: [(offset: Int, length: Int)] = multiplanar
                ? (0..<Int(buffer.length)).map { (Int(planeScratch[$0].m.mem_offset), Int(planeScratch[$0].length)) }
                : [(Int(buffer.m.offset), Int(buffer.length))]
            for region in regions {
                let (base, error) = system.mmap(length: region.length, fd: device.fd, offset: region.offset)
                guard let base else {
                    throw CaptureError(.deviceFailed, "\(path): cannot map capture buffer \(index): \(Errno(rawValue: error))")
                }
                planes.append((base, region.length))
            }
            mappings.append(planes)
        }
        for index in 0..<count {
            do {
                try queueAtStart(index)
            } catch {
                throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot queue capture buffer (\(error))"))
            }
        }
    }

    public func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        if first {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    /// A `v4l2_buffer` for `index`, pointing at the plane scratch array when multi-planar.
    func emptyBuffer(index: UInt32 = 0) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = index
        buffer.type = bufferType.rawValue
        buffer.memory = memory.rawValue
        if multiplanar {
            planeScratch.update(repeating: v4l2_plane(), count: Int(VIDEO_MAX_PLANES))
            buffer.m.planes = planeScratch
            buffer.length = UInt32(VIDEO_MAX_PLANES)
        }
        return buffer
    }

    /// The buffer to hand the driver for ring slot `index`: with USERPTR, the memory of the
    /// pool buffer in that slot.
    func queueableBuffer(index: UInt32) -> v4l2_buffer {
        var buffer = emptyBuffer(index: index)
        guard memory == V4L2_MEMORY_USERPTR, let pixels = slots[Int(index)] else { return buffer }
        if multiplanar {
            for (p, plane) in pixels.planes.prefix(2).enumerated() {
                planeScratch[p].m.userptr = UInt(bitPattern: plane.base)
                planeScratch[p].length = UInt32(plane.stride * plane.height)
            }
            buffer.length = 2
        } else {
            buffer.m.userptr = UInt(bitPattern: pixels.planes[0].base)
            buffer.length = UInt32(pixels.byteCount)
        }
        return buffer
    }


    func requeue(_ index: UInt32) {
        var buffer = queueableBuffer(index: index)
        do {
            try device.ioctl(.queueBuffer, &buffer)
        } catch {
            // Kept aside and retried: vivid's inject_vidioc_qbuf_error, like a real
            // driver's transient failure, refuses one QBUF and takes the next.
            unqueued.append(index)
            lastQueueError = error
        }
    }

    /// Retries buffers the driver refused. Three refusals in a row end the recording:
    /// the ring would run dry and the camera stall.
    func requeueRefused() -> SourceEnd? {
        guard !unqueued.isEmpty else { return nil }
        if let error = lastQueueError, error.errno.rawValue == ENODEV {
            return .deviceLost(lostMessage(error))
        }
        let pending = unqueued
        unqueued = []
        for index in pending { requeue(index) }
        let taken = UInt64(pending.count - unqueued.count)
        state.withLock { $0.statistics.requeuedAfterRefusal += taken }
        if unqueued.isEmpty {
            refusedQueueing = 0
            return nil
        }
        refusedQueueing += 1
        if refusedQueueing >= 3, let error = lastQueueError {
            return .deviceLost("\(path) keeps refusing capture buffers (\(error))")
        }
        return nil
    }


    /// Stops streaming and releases the buffers and the node (and with it the lock).
    func teardown() {
        guard !tornDown else { return }
        tornDown = true
        if streaming {
            var type = Int32(bitPattern: bufferType.rawValue)
            try? device.ioctl(.streamOff, &type)
            streaming = false
        }
        for buffer in mappings {
            for plane in buffer { _ = system.munmap(plane.base, length: plane.length) }
        }
        mappings = []
        releaseBuffers()
        // After STREAMOFF the camera holds none of them: the ring goes back to the pool.
        for case let buffer? in slots { buffer.recycle() }
        slots = []
        device.close()
    }

    /// `VIDIOC_REQBUFS` with a count of 0: the driver lets go of the ring.
    func releaseBuffers() {
        guard buffersRequested else { return }
        buffersRequested = false
        var release = v4l2_requestbuffers()
        release.type = bufferType.rawValue
        release.memory = memory.rawValue
        try? device.ioctl(.requestBuffers, &release)
    }
}
