import ArgumentParser
import Audio

/// `--audio`: the recording's sound, AAC-LC in the container files beside the picture.
struct AudioOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Record sound beside the picture. DEVICE: an ALSA capture device (hw:CARD=C920,DEV=0, plughw:1,0, default; `camrec devices` lists them), its samples placed by ALSA's monotonic hardware timestamps on the video's clock, its clock's drift corrected and overruns filled with silence of their length. camera: the microphone on the same USB device as --device. test: a built-in tone, silent but for a 10 ms 1 kHz burst at the start of every second; with --test-pattern the first frame of every second is white below the middle, so the offset can be measured from the file. The sound is AAC-LC in MP4, QuickTime, Matroska and MPEG-TS files, to media servers (rtmp://, rtsp://, srt://), in event clips with a container (pre-roll included) and on the live page (--http; its Sound on button); raw .h264/.h265 files, stdout (-) and tcp:// carry video only.", valueName: "DEVICE|camera|test"))
    var audio: String?

    @Option(help: "The sound's codec: aac (AAC-LC, libavcodec's encoder; every container and server) or opus (libopus; MP4, Matroska, MPEG-TS, RTSP, SRT and the live page, not RTMP or QuickTime; 8, 12, 16, 24 or 48 kHz).")
    var audioCodec: SoundCodec = .aac

    @Option(parsing: .unconditional, help: "Samples a second of --audio (default 48000, or for a microphone 48000 if it offers it, else its nearest): 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200 or 96000.")
    var audioRate: Int?

    @Option(parsing: .unconditional, help: "Channels of --audio, 1 to 8 (default 1, or for a microphone mono or stereo as it has them).")
    var audioChannels: Int?

    @Option(help: "Bit rate of --audio in bits per second; a k suffix works (default 64k a channel).")
    var audioBitrate: Bitrate?

    var isOn: Bool { audio != nil }
    var isTestTone: Bool { audio == "test" }
    var isCameraMicrophone: Bool { audio == "camera" }

    /// The test tone's format; a microphone's comes from the device.
    var testFormat: AudioFormat {
        AudioFormat(sampleRate: audioRate ?? 48000, channels: audioChannels ?? 1)
    }

    /// The bit rate for `format`: the asked one, or 64k a channel.
    func bitrate(for format: AudioFormat) -> Int { audioBitrate?.bitsPerSecond ?? min(64_000 * format.channels, mostBits(format)) }

    /// The most the codec carries at `format`.
    func mostBits(_ format: AudioFormat) -> Int { audioCodec.mostBits(format) }

    func validate() throws {
        guard let audio else {
            if audioRate != nil || audioChannels != nil || audioBitrate != nil || audioCodec != .aac {
                throw ValidationError("--audio-rate, --audio-channels, --audio-bitrate and --audio-codec go with --audio")
            }
            return
        }
        guard !audio.isEmpty, !audio.contains(where: { $0.isNewline || $0 == "\0" }) else {
            throw ValidationError("--audio: give an ALSA capture device (hw:CARD=C920,DEV=0; `camrec devices` lists them), camera or test")
        }
        guard audio.utf8.count <= 256 else {
            throw ValidationError("--audio: a device name of \(audio.utf8.count) bytes is too long (ALSA names are at most 256)")
        }
        if let audioRate, !audioCodec.sampleRates.contains(audioRate) {
            throw ValidationError("--audio-rate \(audioRate): \(audioCodec == .aac ? "use" : "Opus takes") one of \(audioCodec.sampleRates.map(String.init).joined(separator: ", "))")
        }
        if let audioChannels, !AudioFormat.channelRange.contains(audioChannels) {
            throw ValidationError("--audio-channels must be between 1 and 8, got \(audioChannels)")
        }
        // A microphone's format is known once it is open (RecordCommand+Sound checks it again then).
        if let audioBitrate, isTestTone, audioBitrate.bitsPerSecond > mostBits(testFormat) {
            throw ValidationError("--audio-bitrate \(audioBitrate.bitsPerSecond): \(audioCodec == .aac ? "AAC" : "Opus") carries at most \(mostBits(testFormat)) bit/s at \(testFormat); give less")
        }
    }
}

extension SoundCodec: ExpressibleByArgument {}
