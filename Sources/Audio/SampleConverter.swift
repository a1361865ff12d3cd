import CFFmpeg
import Encoder
import Libav

/// A microphone's interleaved samples to the encoder's float planes (libswresample), at the same
/// nominal rate but stretched or squeezed by the amount the drift corrector asks (its compensation).
final class SampleConverter {
    private var context: OpaquePointer?
    let channels: Int
    let sampleRate: Int
    /// libswresample's pointer arrays, made once (no allocation per block).
    private let inputPointers = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 1)
    private let outputPointers: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>

    init(sampleRate: Int, channels: Int, input: ALSACapture.SampleFormat) throws {
        if let failure = LazyLibrary.loadFailure({ camrec_swresample_try_load($0, $1) == 0 }) {
            throw EncoderError(.unavailable, failure)
        }
        self.channels = channels
        self.sampleRate = sampleRate
        outputPointers = .allocate(capacity: channels)
        var layout = AVChannelLayout(), inputLayout = AVChannelLayout()
        av_channel_layout_default(&layout, Int32(channels))
        av_channel_layout_default(&inputLayout, Int32(channels))
        defer { av_channel_layout_uninit(&layout); av_channel_layout_uninit(&inputLayout) }
        let inFormat: AVSampleFormat = input == .s16 ? AV_SAMPLE_FMT_S16 : input == .s32 ? AV_SAMPLE_FMT_S32 : AV_SAMPLE_FMT_FLT
        var made: OpaquePointer?
        let status = swr_alloc_set_opts2(&made, &layout, AV_SAMPLE_FMT_FLTP, Int32(sampleRate),
                                         &inputLayout, inFormat, Int32(sampleRate), 0, nil)
        guard status >= 0, let made else {
            throw EncoderError(.unavailable, "libswresample refused \(sampleRate) Hz: \(libavErrorDescription(status))")
        }
        // Resampling from the start, so that compensation never re-initialises it mid-stream.
        av_opt_set_int(UnsafeMutableRawPointer(made), "flags", Int64(SWR_FLAG_RESAMPLE), 0)
        let initialised = swr_init(made)
        guard initialised >= 0 else {
            var freed: OpaquePointer? = made
            swr_free(&freed)
            throw EncoderError(.unavailable, "libswresample refused \(sampleRate) Hz: \(libavErrorDescription(initialised))")
        }
        context = made
    }

    deinit {
        swr_free(&context)
        inputPointers.deallocate()
        outputPointers.deallocate()
    }

    /// Samples it holds, in output samples (its filter's delay).
    var delay: Int { context.map { Int(swr_get_delay($0, Int64(sampleRate))) } ?? 0 }

    /// Adds `samples` (negative: removes) over the next `distance` output samples.
    func compensate(_ samples: Int, over distance: Int) {
        guard let context else { return }
        _ = swr_set_compensation(context, Int32(samples), Int32(distance))
    }

    /// Converts `frames` interleaved input frames at `input` into `planes` (one per channel, room
    /// for `capacity` each); returns the samples written to each.
    func convert(_ input: UnsafeRawPointer, frames: Int, into planes: UnsafeBufferPointer<UnsafeMutablePointer<Float>>, capacity: Int) throws -> Int {
        guard let context else { return 0 }
        inputPointers[0] = input.assumingMemoryBound(to: UInt8.self)
        for (channel, plane) in planes.enumerated() {
            outputPointers[channel] = UnsafeMutableRawPointer(plane).assumingMemoryBound(to: UInt8.self)
        }
        let written = swr_convert(context, outputPointers, Int32(capacity), inputPointers, Int32(frames))
        guard written >= 0 else { throw EncoderError(.failed, "converting the microphone's samples failed: \(libavErrorDescription(written))") }
        return Int(written)
    }
}
