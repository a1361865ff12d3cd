import CALSA
import Capture
import Encoder
import Frames
import Glibc
import Libav

/// One ALSA capture device (libasound), opened and set up for camrec: interleaved samples in a
/// format camrec converts (16- or 32-bit integers, or float), at the asked or the device's own rate
/// and channels, periods of about 10 ms in a buffer of up to five seconds (the first moments wait there
/// for the first frame, and a busy machine has that long to read: an overrun loses all it held), and monotonic hardware
/// timestamps, so each block read says when its first sample was captured (the stamp, less the samples
/// after it).
final class ALSACapture {
    enum SampleFormat {
        case s16, s32, float
        var bytes: Int { self == .s16 ? 2 : 4 }
        var alsa: snd_pcm_format_t {
            switch self {
            case .s16: return SND_PCM_FORMAT_S16_LE
            case .s32: return SND_PCM_FORMAT_S32_LE
            case .float: return SND_PCM_FORMAT_FLOAT_LE
            }
        }
    }

    /// One read: `frames` samples (per channel), the first of them `behind` samples before the device's
    /// timestamp `stamp` (the block and what waited after it); `afterOverrun` when samples were lost
    /// just before them. The corrector turns `behind` into time at the rate it measures: seconds of
    /// backlog at the nominal rate would put a 0.5% slow clock's blocks 25 ms off for 5 s waiting.
    struct Block {
        var frames: Int
        var stamp: UInt64
        var behind: UInt64
        var afterOverrun: Bool
    }

    let name: String
    let sampleRate: Int
    let channels: Int
    let sampleFormat: SampleFormat
    let periodFrames: Int
    let bufferFrames: Int
    /// Interleaved samples of the last block read (`periodFrames * 2` frames at most).
    let buffer: UnsafeMutableRawPointer
    let bufferCapacity: Int
    private var pcm: OpaquePointer?
    private var overrunPending = false
    private(set) var overruns = 0
    /// When the last block was read, and how long before the read that found the last overrun: how
    /// long the reader was held off (a held thread, not the device, when it is past the buffer's length).
    private var lastReadAt: UInt64 = 0
    private(set) var lastOverrunAway: UInt64 = 0
    /// What waited in the device at the last read (frames), and at the last read before the last
    /// overrun: a reader that reads on but too slowly overruns with its whole buffer waiting.
    private var lastBacklog: UInt64 = 0
    private(set) var lastOverrunBacklog: UInt64 = 0
    /// Blocks whose timestamp the device gave as zero (then the read's own time stands in).
    private(set) var untimedBlocks = 0

    /// Opens `name` and sets it up; `rate` and `channels` nil take the device's own (48 kHz if it
    /// offers it, else the nearest it has; mono or stereo as it has them).
    /// `rates`: the rates the encoder takes (the device's own is chosen among them).
    init(name: String, rate: Int?, channels: Int?, rates: [Int] = AudioFormat.sampleRates) throws {
        if let failure = LazyLibrary.loadFailure({ camrec_alsa_try_load($0, $1) == 0 }) {
            throw EncoderError(.unavailable, failure)
        }
        self.name = name
        var pcm: OpaquePointer?
        let opened = snd_pcm_open(&pcm, name, snd_pcm_stream_t(rawValue: UInt32(camrec_SND_PCM_STREAM_CAPTURE)), 0)
        guard opened == 0, let pcm else { throw Self.openError(name, opened) }
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        func fail(_ error: CaptureError) -> CaptureError { snd_pcm_close(pcm); return error }
        guard let hw, snd_pcm_hw_params_any(pcm, hw) >= 0,
              snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED) == 0 else {
            throw fail(CaptureError(.unsupportedFormat, "the microphone \(name) does not deliver interleaved samples; name its plughw: device instead"))
        }
        guard let format = [SampleFormat.s16, .s32, .float].first(where: { snd_pcm_hw_params_test_format(pcm, hw, $0.alsa) == 0 }),
              snd_pcm_hw_params_set_format(pcm, hw, format.alsa) == 0 else {
            throw fail(CaptureError(.unsupportedFormat, "the microphone \(name) offers no 16- or 32-bit or float samples; name its plughw: device instead"))
        }
        sampleFormat = format

        var low: UInt32 = 0, high: UInt32 = 0, dir: Int32 = 0
        snd_pcm_hw_params_get_channels_min(hw, &low)
        snd_pcm_hw_params_get_channels_max(hw, &high)
        let channelRange = "\(low)\(high == low ? "" : " to \(min(high, 64))")"
        let chosenChannels = channels ?? Int(min(max(low, 1), 2) <= high ? min(max(low, 1), 2) : low)
        guard chosenChannels <= 8, snd_pcm_hw_params_set_channels(pcm, hw, UInt32(chosenChannels)) == 0 else {
            throw fail(CaptureError(.unsupportedFormat, "the microphone \(name) records \(channelRange) channel\(high == 1 ? "" : "s"), not \(chosenChannels); give --audio-channels \(low)"))
        }
        self.channels = chosenChannels

        snd_pcm_hw_params_get_rate_min(hw, &low, &dir)
        snd_pcm_hw_params_get_rate_max(hw, &high, &dir)
        let offered = rates.filter { snd_pcm_hw_params_test_rate(pcm, hw, UInt32($0), 0) == 0 }
        let chosenRate = rate ?? (offered.contains(48000) ? 48000 : offered.min(by: { abs($0 - 48000) < abs($1 - 48000) }) ?? 48000)
        guard snd_pcm_hw_params_set_rate(pcm, hw, UInt32(chosenRate), 0) == 0 else {
            let list = offered.isEmpty ? "\(low) to \(high) Hz, none of them a rate the encoder takes" : offered.map(String.init).joined(separator: ", ") + " Hz"
            throw fail(CaptureError(.unsupportedFormat, "the microphone \(name) records at \(list), not \(chosenRate) Hz; give --audio-rate \(offered.first.map(String.init) ?? "with a rate the encoder takes") or its plughw: device"))
        }
        sampleRate = chosenRate

        var period = snd_pcm_uframes_t(max(chosenRate / 100, 32))
        var periodDir: Int32 = 0
        snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &periodDir)
        // Five seconds, or as near as the device allows: in the test VM, beside a build and stress-ng, the audio
        // thread (reading, resampling and AAC in one) fell 2.0 s behind and overran a two-second buffer.
        var bufferSize = snd_pcm_uframes_t(chosenRate * 5)
        snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &bufferSize)
        let applied = snd_pcm_hw_params(pcm, hw)
        guard applied == 0 else {
            throw fail(CaptureError(.unsupportedFormat, "the microphone \(name) refused \(chosenRate) Hz, \(chosenChannels) channel(s): \(String(cString: snd_strerror(applied)))"))
        }
        snd_pcm_hw_params_get_period_size(hw, &period, &periodDir)
        snd_pcm_hw_params_get_buffer_size(hw, &bufferSize)
        periodFrames = max(Int(period), 1)
        bufferFrames = Int(bufferSize)

        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        guard let sw, snd_pcm_sw_params_current(pcm, sw) == 0,
              snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE) == 0,
              snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC) == 0,
              snd_pcm_sw_params_set_avail_min(pcm, sw, period) == 0,
              snd_pcm_sw_params(pcm, sw) == 0 else {
            throw fail(CaptureError(.unsupportedFormat, "the microphone \(name) gives no monotonic timestamps (ALSA's sw_params); name its hw: or plughw: device"))
        }
        bufferCapacity = periodFrames * 2
        buffer = .allocate(byteCount: bufferCapacity * chosenChannels * format.bytes, alignment: 16)
        self.pcm = pcm
    }

    deinit {
        close()
        buffer.deallocate()
    }

    func start() throws {
        guard let pcm else { return }
        let status = snd_pcm_start(pcm)
        guard status == 0 else { throw failure("starting", status) }
    }

    /// Restarts a device that overran before the recording's first frame, without counting it.
    func recoverFromOverrunBeforeStart() throws {
        guard let pcm, snd_pcm_state(pcm) == SND_PCM_STATE_XRUN else { return }
        try restartAfterOverrun(pcm)
    }

    func close() {
        guard let pcm else { return }
        snd_pcm_drop(pcm)
        snd_pcm_close(pcm)
        self.pcm = nil
    }

    /// Reads what has been captured, up to `bufferCapacity` frames, waiting at most `timeoutMilliseconds`
    /// for a period; nil when nothing came in that time. An overrun is counted and recovered from; the
    /// next block says so.
    func read(timeoutMilliseconds: Int32) throws -> Block? {
        guard let pcm else { return nil }
        while true {
            if timeoutMilliseconds > 0 {
                let ready = snd_pcm_wait(pcm, timeoutMilliseconds)
                if ready == 0 { return nil }
                if ready < 0 { try recover(Int(ready)); continue }
            }
            let available = snd_pcm_avail_update(pcm)
            if available < 0 { try recover(Int(available)); continue }
            if available == 0 { return nil }
            let got = snd_pcm_readi(pcm, buffer, snd_pcm_uframes_t(min(Int(available), bufferCapacity)))
            if got == -Int(EAGAIN) { return nil }
            if got < 0 { try recover(got); continue }
            if got == 0 { return nil }
            let frames = Int(got)
            var left: snd_pcm_uframes_t = 0
            var stamp = timespec()
            snd_pcm_htimestamp(pcm, &left, &stamp)
            let now = MonotonicClock.now()
            lastReadAt = now
            var newest: UInt64
            if let stamped = Self.newestSampleTime(stamp, now: now) {
                newest = stamped
            } else {
                // No hardware timestamp (some plugins), or one that cannot be right: the time of the
                // read stands in, less what waits.
                untimedBlocks += 1
                newest = now
                left = snd_pcm_uframes_t(max(snd_pcm_avail_update(pcm), 0))
            }
            // What waits behind the block is at most the buffer, whatever the driver says.
            let behind = min(UInt64(left), UInt64(bufferFrames)) + UInt64(frames)
            lastBacklog = behind
            let block = Block(frames: frames, stamp: newest, behind: behind, afterOverrun: overrunPending)
            overrunPending = false
            return block
        }
    }

    /// The monotonic time of the newest sample read, from ALSA's hardware timestamp; nil when there is
    /// none (zero) or it cannot be right: negative, nanoseconds out of range, or later than a second
    /// after `now` (a driver's nonsense would otherwise fill the recording with silence up to it).
    static func newestSampleTime(_ stamp: timespec, now: UInt64) -> UInt64? {
        guard stamp.tv_sec >= 0, stamp.tv_nsec >= 0, stamp.tv_nsec < 1_000_000_000,
              UInt64(stamp.tv_sec) <= now / 1_000_000_000 + 1 else { return nil }
        let time = UInt64(stamp.tv_sec) * 1_000_000_000 + UInt64(stamp.tv_nsec)
        guard time > 0, time <= now || time - now <= 1_000_000_000 else { return nil }
        return time
    }

    /// An overrun (EPIPE) or a suspend (ESTRPIPE) is recovered from; anything else ends the sound.
    private func recover(_ status: Int) throws {
        guard let pcm else { return }
        switch Int32(-status) {
        case EPIPE:
            overruns += 1
            let now = MonotonicClock.now()
            lastOverrunAway = lastReadAt > 0 && now > lastReadAt ? now - lastReadAt : 0
            lastOverrunBacklog = lastBacklog
            try restartAfterOverrun(pcm)
        case ESTRPIPE:
            overrunPending = true
            // Resumed where the driver can, else (no resume, or a plugin's EAGAIN) started afresh. Nothing
            // to poll for: the kernel holds both calls until the card has power again (snd_power_wait).
            if snd_pcm_resume(pcm) != 0 { _ = snd_pcm_prepare(pcm); _ = snd_pcm_start(pcm) }
        case EINTR:
            return
        default:
            throw failure("reading", Int32(status))
        }
    }

    /// Prepares and starts the device again; the next block says samples were lost before it.
    private func restartAfterOverrun(_ pcm: OpaquePointer) throws {
        overrunPending = true
        let prepared = snd_pcm_prepare(pcm)
        guard prepared == 0 else { throw failure("recovering from an overrun", prepared) }
        let started = snd_pcm_start(pcm)
        guard started == 0 else { throw failure("restarting after an overrun", started) }
    }

    private func failure(_ doing: String, _ status: Int32) -> CaptureError {
        let cause = status == -ENODEV ? "it went away" : String(cString: snd_strerror(status))
        return CaptureError(.deviceFailed, "the microphone \(name) failed \(doing): \(cause)")
    }

    static func openError(_ name: String, _ status: Int32) -> CaptureError {
        let cause = String(cString: snd_strerror(status))
        switch -status {
        case ENOENT, ENODEV, ENXIO:
            return CaptureError(.sourceMissing, "no microphone \(name) (\(cause)); `camrec devices` lists the microphones (ALSA names like hw:CARD=C920,DEV=0)")
        case EBUSY:
            return CaptureError(.deviceBusy, "the microphone \(name) is busy: another program records from it (a hw: device takes one at a time)")
        case EACCES, EPERM:
            return CaptureError(.permissionDenied, "permission denied on the microphone \(name); join the audio group")
        default:
            return CaptureError(.sourceMissing, "cannot open the microphone \(name): \(cause); `camrec devices` lists the microphones")
        }
    }
}
