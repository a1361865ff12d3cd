import CV4L2
import Glibc
import SystemPackage
import Frames

/// A dequeued buffer on its way into a pool buffer: checked whole, then handed on (zero-copy),
/// decoded (MJPEG), converted by libv4lconvert, or converted in one pass.
extension V4L2CaptureSource {
    func dequeue(_ stream: Stream) -> Dequeued {
        var buffer = emptyBuffer(stream)
        do {
            try device.ioctl(.dequeueBuffer, &buffer)
        } catch {
            if error.errno.rawValue == EAGAIN { return .nothing }
            return .failed(error)
        }
        let index = buffer.index
        let now = MonotonicClock.now()
        let previousSignOfLife = stream.lastSignOfLife
        stream.lastSignOfLife = now
        stream.framesSeen += 1
        // Whatever happens to the frame, the buffer goes straight back to the camera.
        defer { requeue(index, stream) }

        let flags = V4L2BufferFlags(rawValue: buffer.flags)
        let gap = stream.sequences.record(buffer.sequence)
        let wraps = stream.sequences.wraps
        state.withLock {
            $0.statistics.dropped += gap
            $0.statistics.skippedByDevice += gap
            $0.statistics.sequenceWraps = wraps
        }
        if flags.contains(.error) {
            state.withLock {
                $0.statistics.dropped += 1
                $0.statistics.errored += 1
            }
            return .skipped
        }
        // A short buffer (bytesused below one frame) is as corrupt as a flagged one.
        func corrupt() -> Dequeued {
            state.withLock {
                $0.statistics.dropped += 1
                $0.statistics.errored += 1
            }
            return .skipped
        }
        func poolEmpty() -> Dequeued {
            state.withLock {
                $0.statistics.dropped += 1
                $0.statistics.poolEmpty += 1
            }
            return .skipped
        }
        if stream.memory == V4L2_MEMORY_USERPTR {
            guard holdsWholeFrame(buffer, stream) else { return corrupt() }
            // The filled buffer goes on as it is; a free one takes its place in the ring.
            guard let replacement = stream.pool?.tryTake() else { return poolEmpty() }
            let filled = stream.slots[Int(index)]!
            stream.slots[Int(index)] = replacement
            return deliver(filled, buffer, flags: flags, now: now, copied: false, stream)
        }
        if deliversCompressedVideo {
            // The camera's access unit as it is; one larger than a raw 4:2:0 picture has no room (never seen).
            // Zero bytes after the last unit are Annex B padding (trailing_zero_8bits) and are left behind:
            // v4l2loopback reports a buffer written before the reader's REQBUFS as full (bytesused = sizeimage).
            var payload = jpegPayload(buffer, index: Int(index), stream)
            var used = payload.count
            while used > 0 && payload[used - 1] == 0 { used -= 1 }
            payload = UnsafeRawBufferPointer(rebasing: payload[..<used])
            guard !payload.isEmpty else { return corrupt() }
            guard let out = stream.pool?.tryTake() else { return poolEmpty() }
            guard payload.count <= out.byteCount else {
                out.recycle()
                return corrupt()
            }
            UnsafeMutableRawPointer(out.planes[0].base).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
            out.payloadByteCount = payload.count
            return deliver(out, buffer, flags: flags, now: now, stream)
        }
        if let jpegDecoder = stream.jpegDecoder {
            guard let out = stream.pool?.tryTake() else { return poolEmpty() }
            let decoded: UnsafeRawBufferPointer
            do {
                decoded = try jpegDecoder.decode(jpegPayload(buffer, index: Int(index), stream), into: out)
                stream.jpegFailure = nil
            } catch {
                out.recycle()
                stream.jpegFailure = error
                // An undecodable frame is no sign of life (see `jpegFailure`).
                stream.lastSignOfLife = previousSignOfLife
                return corrupt()
            }
            let delivered = deliver(out, buffer, flags: flags, now: now, stream)
            // The camera's bytes as they came (the decoder's copy, taken before it decoded: the buffer
            // itself v4l2loopback can have written over since), stamped as the frame the recording holds.
            stream.jpegSink?.publish(jpeg: decoded, sequence: out.sequence, presentationTimeNanoseconds: out.presentationTimeNanoseconds)
            return delivered
        }
        let image: FrameConverter.CameraImage
        if let libraryConverter = stream.libraryConverter {
            let mapping = stream.mappings[Int(index)][0]
            let used = Int(buffer.bytesused) > 0 ? Int(buffer.bytesused) : mapping.length
            guard let converted = libraryConverter.convert(mapping.base, byteCount: used) else {
                return corrupt()
            }
            image = converted
        } else {
            guard let own = cameraImage(buffer, index: Int(index), stream) else { return corrupt() }
            image = own
        }
        guard let out = stream.pool?.tryTake() else { return poolEmpty() }
        FrameConverter.convert(image, into: out)
        return deliver(out, buffer, flags: flags, now: now, stream)
    }

    /// Stamps a filled pool buffer with the frame's sequence and times, and counts it.
    /// `copied`: the CPU wrote the frame into `out` (every path but zero-copy).
    func deliver(_ out: PixelBuffer, _ buffer: v4l2_buffer, flags: V4L2BufferFlags, now: UInt64,
                 copied: Bool = true, _ stream: Stream) -> Dequeued {
        let stamp = UInt64(buffer.timestamp.tv_sec) &* 1_000_000_000 &+ UInt64(buffer.timestamp.tv_usec) &* 1_000
        let captured = stream.captureTimes.captureTime(stamp: stamp, flags: flags, dequeuedAt: now)
        out.sequence = stream.sequences.extended
        out.captureTimeNanoseconds = captured
        out.presentationTimeNanoseconds = stream.clock.presentationTime(capturedAt: captured)
        let written = !copied ? 0 : out.payloadByteCount > 0 ? UInt64(out.payloadByteCount)
            : UInt64(out.planes.reduce(0) { $0 + $1.width * $1.height })
        state.withLock {
            $0.statistics.delivered += 1
            $0.statistics.bytesWrittenByCPU += written
        }
        return .frame(out)
    }

    /// Whether a dequeued USERPTR buffer holds a whole frame where the pool buffer expects it.
    func holdsWholeFrame(_ buffer: v4l2_buffer, _ stream: Stream) -> Bool {
        let planeScratch = stream.planeScratch
        if let geometry {
            let used = multiplanar ? Int(planeScratch[0].bytesused) : Int(buffer.bytesused)
            let offset = multiplanar ? Int(planeScratch[0].data_offset) : 0
            return offset == 0 && (used == 0 || used >= geometry.byteCount)
        }
        for p in 0..<memoryPlaneCount {
            let rows = p == 0 ? frameSize.height : (frameSize.height + 1) / 2
            let used = Int(planeScratch[p].bytesused)
            // Data further into the plane than its start would be a shifted picture.
            if planeScratch[p].data_offset != 0 || (used != 0 && used < bytesPerLine[p] * rows) { return false }
        }
        return true
    }

    /// The JPEG bytes of a dequeued buffer: `bytesused` (past `data_offset` when multi-planar),
    /// empty when the driver reports none or more than the buffer holds.
    func jpegPayload(_ buffer: v4l2_buffer, index: Int, _ stream: Stream) -> UnsafeRawBufferPointer {
        let planeScratch = stream.planeScratch
        let mapping = stream.mappings[index][0]
        let used = multiplanar ? Int(planeScratch[0].bytesused) : Int(buffer.bytesused)
        let offset = multiplanar ? Int(planeScratch[0].data_offset) : 0
        guard used > offset, used <= mapping.length else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: mapping.base + offset, count: used - offset)
    }

    /// The planes of a dequeued buffer, or nil when it holds less than one frame.
    func cameraImage(_ buffer: v4l2_buffer, index: Int, _ stream: Stream) -> FrameConverter.CameraImage? {
        let planeScratch = stream.planeScratch
        let mapping = stream.mappings[index]
        var planes: [UnsafeRawPointer] = []
        var strides: [Int] = []
        if let geometry {
            let used = multiplanar ? Int(planeScratch[0].bytesused) : Int(buffer.bytesused)
            let offset = multiplanar ? Int(planeScratch[0].data_offset) : 0
            if used != 0 && used - offset < geometry.byteCount { return nil }
            if mapping[0].length - offset < geometry.byteCount { return nil }
            planes = geometry.offsets.map { UnsafeRawPointer(mapping[0].base + offset + $0) }
            strides = geometry.strides
        } else {
            for p in 0..<memoryPlaneCount {
                let offset = Int(planeScratch[p].data_offset)
                let rows = p == 0 || layout == .nv16 || layout == .nv61 || layout == .yuv422p
                    ? frameSize.height : (frameSize.height + 1) / 2
                let needed = bytesPerLine[p] * rows
                let used = Int(planeScratch[p].bytesused)
                if used != 0 && used - offset < needed { return nil }
                if mapping[p].length - offset < needed { return nil }
                planes.append(UnsafeRawPointer(mapping[p].base + offset))
                strides.append(bytesPerLine[p])
            }
        }
        return FrameConverter.CameraImage(layout: layout!, width: frameSize.width, height: frameSize.height,
                                          planes: planes, strides: strides)
    }
}
