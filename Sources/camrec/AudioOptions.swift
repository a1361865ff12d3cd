import ArgumentParser
import Audio

/// `--audio`: the recording's sound, AAC-LC in the container files beside the picture.
struct AudioOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Record sound beside the picture. test: a built-in tone, silent but for a 10 ms 1 kHz burst at the start of every second, on the video's clock; with --test-pattern the first frame of every second is white below the middle, so the offset can be measured from the file. The sound is AAC-LC in MP4, QuickTime, Matroska and MPEG-TS files, to media servers (rtmp://, rtsp://, srt://), in event clips with a container (pre-roll included) and on the live page (--http; its Sound on button); raw .h264/.h265 files, stdout (-) and tcp:// carry video only. (Capture from an ALSA microphone is not built yet.)", valueName: "test"))
    var audio: String?

    @Option(parsing: .unconditional, help: "Samples a second of --audio (default 48000): 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200 or 96000.")
    var audioRate: Int?

    @Option(parsing: .unconditional, help: "Channels of --audio, 1 to 8 (default 1).")
    var audioChannels: Int?

    @Option(help: "AAC bit rate of --audio in bits per second; a k suffix works (default 64k a channel).")
    var audioBitrate: Bitrate?

    var isOn: Bool { audio != nil }

    var format: AudioFormat {
        AudioFormat(sampleRate: audioRate ?? 48000, channels: audioChannels ?? 1)
    }

    var bitrate: Int { audioBitrate?.bitsPerSecond ?? min(64_000 * format.channels, mostBits) }

    /// AAC-LC carries at most 6144 bits a channel in each frame of 1024 samples.
    private var mostBits: Int { 6144 * format.channels * format.sampleRate / 1024 }

    func validate() throws {
        guard let audio else {
            if audioRate != nil || audioChannels != nil || audioBitrate != nil {
                throw ValidationError("--audio-rate, --audio-channels and --audio-bitrate go with --audio test")
            }
            return
        }
        guard audio == "test" else {
            throw ValidationError("--audio \(audio): this camrec records only its built-in test tone (--audio test); capture from an ALSA microphone is not built yet")
        }
        if let audioRate, !AudioFormat.sampleRates.contains(audioRate) {
            throw ValidationError("--audio-rate \(audioRate): use one of \(AudioFormat.sampleRates.map(String.init).joined(separator: ", "))")
        }
        if let audioChannels, !AudioFormat.channelRange.contains(audioChannels) {
            throw ValidationError("--audio-channels must be between 1 and 8, got \(audioChannels)")
        }
        if let audioBitrate, audioBitrate.bitsPerSecond > mostBits {
            throw ValidationError("--audio-bitrate \(audioBitrate.bitsPerSecond): AAC carries at most \(mostBits) bit/s at \(format); give less")
        }
    }
}
