import Bitstream
import Encoder
import Frames
import Threading

extension Recorder {
    /// Runs on a branch's encoder thread for every access unit its encoder produces.
    func publish(_ packet: EncodedPacket, from branch: EncodingBranch, primary: Bool, onFrameTimed: (@Sendable (FrameTiming) -> Void)?) {
        let chunk = chunkPool.take()
        let info: AccessUnitInfo
        do {
            info = try chunk.fill { try branch.writer.write(accessUnit: packet.data, into: &$0) }
        } catch {
            chunk.retain()
            chunk.release()
            fail(.encoder(EncoderError(.failed, "the encoder produced a stream camrec cannot make valid: \(error)")))
            return
        }
        if info.heldBack || info.nalCount == 0 {
            // Parameter sets before the first picture, or only an encoder banner: not a frame.
            chunk.retain()
            chunk.release()
            return
        }
        chunk.isIDR = info.isIDR
        chunk.sequence = packet.sequence
        chunk.presentationTimeNanoseconds = packet.presentationTimeNanoseconds
        chunk.captureTimeNanoseconds = packet.captureTimeNanoseconds
        if info.isIDR { branch.idrCount += 1 }
        if info.insertedParameterSets { branch.repairedCount += 1 }
        if branch.firstPresentation == nil { branch.firstPresentation = packet.presentationTimeNanoseconds }
        if primary {
            shared.withLock {
                $0.progress.frames += 1
                $0.progress.bytes += chunk.bytes.count
                $0.progress.lastPresentationNanoseconds = packet.presentationTimeNanoseconds
            }
        }
        if primary, let onFrameTimed {
            let now = MonotonicClock.now()
            let started = encodeStarts.withLock { $0[Int(packet.sequence % 64)] }
            onFrameTimed(FrameTiming(
                encodeNanoseconds: started.sequence == packet.sequence && now >= started.nanoseconds ? now - started.nanoseconds : nil,
                captureToOutputsNanoseconds: packet.captureTimeNanoseconds > 0 && now >= packet.captureTimeNanoseconds
                    ? now - packet.captureTimeNanoseconds : nil))
        }
        chunk.retain()
        branch.hub.publish(chunk)
    }

    /// Each branch encodes on a thread of its own from its queue, and flushes at the end.
    func startBranchThreads(_ branches: [EncodingBranch], release: SharedFrameRelease) {
        for branch in branches {
            // A camera's stream is only passed on: on the recording thread, no encoder thread (`hand`).
            if branch.encoder.isPassthrough && branches.count == 1 { continue }
            // One encoding waits for its branch (the pool bounds what is ahead); several keep branchQueueDepth each.
            let depth = branches.count == 1 ? Self.minimumSpareBuffers : branchQueueDepth
            let queue = BlockingQueue<BranchWork>(capacity: depth)
            branch.queue = queue
            let worker = WorkerThread(name: "encode-\(branch.codec.rawValue)") { [unowned self, unowned branch] in
                while let work = queue.pop() {
                    guard case .frame(let buffer, let force) = work else {
                        if case .sourceGap(let done) = work { self.finishPending(branch, then: done) }
                        continue
                    }
                    if branch.encoderFailed {
                        release.release(buffer)
                        continue
                    }
                    do {
                        try branch.encoder.encode(buffer, forceKeyframe: force)
                    } catch {
                        branch.encoderFailed = true
                        self.fail(Self.classify(error))
                    }
                }
                if !branch.encoderFailed {
                    do { try branch.encoder.flush() } catch { self.fail(Self.classify(error)) }
                }
            }
            branch.worker = worker
            worker.start()
        }
    }

    /// Gives a frame to every branch. With several encodings of a live source, one whose queue is full
    /// skips it (and owes an IDR if this was one) so the other never waits. Otherwise the branch is
    /// waited for: a file loses nothing, and one live encoding that falls behind backs up into the
    /// pool's headroom, where the source drops and counts what does not fit.
    /// The JPEG tap gets the frame too when a viewer is due for it and it is not busy with another.
    func hand(_ buffer: PixelBuffer, to branches: [EncodingBranch], forceKeyframe force: Bool, release: SharedFrameRelease,
                      tap: PictureTap?) {
        let tapped = tap?.wants(buffer) == true
        release.hold(buffer, extra: tapped ? 1 : 0)
        if tapped, tap?.offer(buffer) != true { release.release(buffer) }
        let mayskip = source.isLive && branches.count > 1
        for branch in branches {
            guard let queue = branch.queue else {
                // Passed on inline (a camera's own stream).
                guard !branch.encoderFailed else { release.release(buffer); continue }
                do { try branch.encoder.encode(buffer, forceKeyframe: force) } catch {
                    branch.encoderFailed = true
                    fail(Self.classify(error))
                }
                continue
            }
            let forceHere = force || branch.owesIDR
            let work = BranchWork.frame(buffer, forceKeyframe: forceHere)
            let taken = mayskip ? queue.tryPush(work) : queue.push(work)
            if taken == true {
                branch.owesIDR = false
            } else {
                branch.owesIDR = forceHere
                branch.skippedFrames += 1
                release.release(buffer)
            }
        }
    }
}
