import Frames
import Glibc

/// `--audio DEVICE`: an ALSA microphone on the recording's clock.
///
/// Each block read from the device says when its first sample was captured (ALSA's monotonic hardware
/// timestamp, the clock V4L2 stamps frames with, less the samples after it at the measured rate). The
/// `DriftCorrector` places it against the samples already put out: silence for what an overrun lost, a
/// drop for what came before the first frame, and otherwise the converter's compensation, so that
/// sample `k` delivered is the one captured `k` samples at the nominal rate after the first frame, for
/// as long as the recording lasts.
public final class MicrophoneSource: SoundSource {
    public let format: AudioFormat
    public let deviceName: String
    public var summary: String { "microphone \(deviceName) (\(format))" }

    private let device: ALSACapture
    private let converter: SampleConverter
    private var corrector: DriftCorrector?
    private var origin: UInt64 = 0
    public private(set) var position: UInt64 = 0

    // Converted samples not yet delivered: planes[c][head ..< head + held].
    private let capacity: Int
    private let planes: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>
    /// Where the converter writes next, one pointer a channel (made once).
    private let outputs: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>
    private var head = 0
    private var held = 0
    /// Samples ever put into the planes, silence included: the output's position.
    private var produced: UInt64 = 0
    private var pendingSilence = 0
    /// A block read and planned but not yet converted, and the frames to leave out at its start.
    private var pendingBlock: ALSACapture.Block?
    private var pendingDrop = 0
    /// When the device started, and the frames read from it since: a device cannot deliver faster than
    /// real time but for what its buffer held (ALSA's `null` device, with no clock, delivers at once, and
    /// reading it unpaced took a core).
    private var preparedAt: UInt64 = 0
    private var framesRead: UInt64 = 0
    /// The first overruns, for the report: where in the sound the silence went, how long, and how long
    /// the reader had been held off (room made at the start: nothing allocated when one comes).
    private struct Overrun {
        var at: UInt64
        var silence: Int
        var away: UInt64
        var backlog: UInt64
    }
    private var overrunNotes: [Overrun] = []
    private static let overrunsNoted = 8

    /// Opens and sets up the device now, so that a device that refuses is a one-line error before
    /// anything starts.
    /// `rates`: the rates the encoder takes; the device's is chosen among them (48 kHz if it has it).
    public init(device name: String, sampleRate: Int?, channels: Int?, rates: [Int] = AudioFormat.sampleRates) throws {
        device = try ALSACapture(name: name, rate: sampleRate, channels: channels, rates: rates)
        deviceName = name
        format = AudioFormat(sampleRate: device.sampleRate, channels: device.channels)
        converter = try SampleConverter(sampleRate: device.sampleRate, channels: device.channels, input: device.sampleFormat)
        // Room for what is waiting to be encoded (under one AAC frame), one read (two periods) stretched
        // by at most 2%, and what the converter lets out of its filter.
        capacity = 4096 + device.bufferCapacity * 2
        planes = .allocate(capacity: device.channels)
        outputs = .allocate(capacity: device.channels)
        for channel in 0..<device.channels {
            planes[channel] = .allocate(capacity: capacity)
            outputs[channel] = planes[channel]
        }
        overrunNotes.reserveCapacity(Self.overrunsNoted)
    }

    deinit {
        device.close()
        for plane in planes { plane.deallocate() }
        planes.deallocate()
        outputs.deallocate()
    }

    public func prepare() throws {
        preparedAt = MonotonicClock.now()
        try device.start()
    }

    public func start(origin: UInt64) throws {
        self.origin = origin
        corrector = DriftCorrector(sampleRate: format.sampleRate, origin: origin)
        // A first frame that took longer than the device's buffer to come: what it lost before the
        // recording began is no overrun of the recording (the first block is placed exactly anyway).
        try device.recoverFromOverrunBeforeStart()
    }

    public func waitForSamples(_ count: Int, shouldStop: () -> Bool) throws -> Bool {
        while held < count {
            if shouldStop() { return false }
            _ = try pump(timeoutMilliseconds: 100)
        }
        return !shouldStop()
    }

    public func collectCaptured() throws {
        while held < capacity / 2, try pump(timeoutMilliseconds: 0) {}
    }

    public func write(channel: Int, into plane: UnsafeMutableBufferPointer<Float>, skipping: Int) {
        let taken = min(plane.count, max(held - skipping, 0))
        if taken > 0 { plane.baseAddress!.update(from: planes[channel] + head + skipping, count: taken) }
        if taken < plane.count { (plane.baseAddress! + taken).update(repeating: 0, count: plane.count - taken) }
    }

    public func advance(_ count: Int) {
        let taken = min(count, held)
        head += taken
        held -= taken
        if held == 0 { head = 0 }
        position += UInt64(count)
    }

    public func captureTime(ofSample index: UInt64) -> UInt64 {
        origin + format.nanoseconds(ofSample: index)
    }

    public func stop() { device.close() }

    public var report: String? {
        guard let corrector else { return nil }
        var parts: [String] = []
        let ppm = Int((corrector.measuredDrift * 1e6).rounded())
        parts.append("its clock ran \(abs(ppm)) ppm \(ppm >= 0 ? "fast" : "slow") against the monotonic clock (corrected)")
        if device.overruns > 0 {
            let silence = corrector.silenced * 1000 / UInt64(format.sampleRate)
            // Why: the reader held off past the buffer (a stop, a starved CPU), or reading on but that far behind.
            let each = overrunNotes.map { note in
                let why = note.away >= 1_000_000_000 ? "not read for \(Self.seconds(note.away / 1000, 1_000_000)) s"
                    : "read \(Self.seconds(note.backlog, format.sampleRate)) s behind"
                return "\(note.silence * 1000 / format.sampleRate) ms at \(Self.seconds(note.at, format.sampleRate)) s, \(why)"
            }
            let more = device.overruns > overrunNotes.count ? ", …" : ""
            parts.append("\(device.overruns) overrun\(device.overruns == 1 ? "" : "s") (samples lost; \(silence) ms of silence put in their place: \(each.joined(separator: "; "))\(more))")
        } else {
            parts.append("no overruns")
        }
        if corrector.lateBlocks > 0 {
            let reads = corrector.lateBlocks == 1 ? "1 read was" : "\(corrector.lateBlocks) reads were"
            parts.append("\(reads) stamped late, by up to \(corrector.mostLate / 1_000_000) ms (the CPU held off; placed by the reads before)")
        }
        if device.untimedBlocks > 0 { parts.append("\(device.untimedBlocks) reads had no hardware timestamp (timed when read)") }
        return "the microphone \(deviceName): " + parts.joined(separator: "; ")
    }

    /// `count` of `perSecond` as seconds with one decimal ("6.1").
    private static func seconds(_ count: UInt64, _ perSecond: Int) -> String {
        let tenths = count * 10 / UInt64(max(perSecond, 1))
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// One step: put out pending silence, or convert the pending block, or read the next block and plan
    /// it. False when nothing was to be had.
    private func pump(timeoutMilliseconds: Int32) throws -> Bool {
        makeRoom()
        let room = capacity - head - held
        if pendingSilence > 0 {
            let count = min(pendingSilence, room)
            for channel in 0..<format.channels {
                (planes[channel] + head + held).update(repeating: 0, count: count)
            }
            held += count
            produced += UInt64(count)
            pendingSilence -= count
            return true
        }
        if let block = pendingBlock {
            pendingBlock = nil
            let skip = min(pendingDrop, block.frames)
            pendingDrop -= skip
            guard block.frames > skip else { return true }
            let input = UnsafeRawPointer(device.buffer) + skip * format.channels * device.sampleFormat.bytes
            for channel in 0..<format.channels { outputs[channel] = planes[channel] + head + held }
            let written = try converter.convert(input, frames: block.frames - skip, into: UnsafeBufferPointer(outputs), capacity: room)
            held += written
            produced += UInt64(written)
            return true
        }
        // Never much faster than real time (a clock 10% fast, far beyond any real one), plus the buffer's worth.
        let allowed = (MonotonicClock.now() &- preparedAt) / 1_000_000 * UInt64(format.sampleRate) * 11 / 10_000
            + UInt64(device.bufferFrames + device.periodFrames)
        if framesRead > allowed {
            if timeoutMilliseconds > 0 {
                MonotonicClock.sleep(until: MonotonicClock.now() + format.nanoseconds(ofSample: framesRead - allowed))
            }
            return false
        }
        guard let block = try device.read(timeoutMilliseconds: timeoutMilliseconds), corrector != nil else { return false }
        framesRead += UInt64(block.frames)
        // Planned in place: the corrector keeps a window of stamps, not worth copying out and back.
        guard let plan = corrector?.plan(stamp: block.stamp, behind: block.behind, frames: block.frames,
                                         outputPosition: Double(produced) + Double(converter.delay), afterGap: block.afterOverrun) else { return false }
        pendingSilence = plan.silence
        pendingDrop += plan.drop
        if block.afterOverrun, overrunNotes.count < Self.overrunsNoted {
            overrunNotes.append(Overrun(at: produced, silence: plan.silence, away: device.lastOverrunAway,
                                        backlog: device.lastOverrunBacklog))
        }
        converter.compensate(plan.compensation, over: plan.distance)
        pendingBlock = block
        return true
    }

    /// Moves what is held to the start of the planes once it is past the first half.
    private func makeRoom() {
        guard head > capacity / 2 else { return }
        for channel in 0..<format.channels where held > 0 {
            planes[channel].update(from: planes[channel] + head, count: held)
        }
        head = 0
    }
}
