import ArgumentParser
import Audio
import Capture
import Encoder
import Hub
import NetStream
import Outputs
import Recorder

extension RecordCommand {
    /// Whether `target` carries sound: a file in a container (MP4, QuickTime, Matroska, MPEG-TS) or a media
    /// server (RTMP, RTSP, SRT).
    func carriesSound(_ target: String) -> Bool {
        if MediaServerURL.looksLikeURL(target) { return true }
        return target != "-" && !TCPEndpoint.looksLikeURL(target) && (files.format ?? ContainerFormat(fileName: target)) != .raw
    }

    /// Where the sound goes and where it does not, in one line ("camrec: sound goes into a.mp4, the live
    /// view; a.h264 carries video only"): raw outputs keep their contract. `clips`: event clips take it.
    func soundRouting(clips: Bool) -> String {
        let silent = outputs.filter { !carriesSound($0) } + listen.map { "--listen \($0)" }
        let clipNames = clips ? ["event clips \(events.eventOutput ?? "")"] : []
        let page = http != nil ? ["the live view"] : []
        let served = rtsp.map { ["--rtsp \($0)"] } ?? []
        return "camrec: sound goes into \((outputs.filter(carriesSound) + clipNames + page + served).joined(separator: ", "))"
            + (silent.isEmpty ? "" : "; \(silent.joined(separator: ", ")) \(silent.count == 1 ? "carries" : "carry") video only")
    }

    func checkSound() throws {
        guard sound.isOn else { return }
        if sound.isCameraMicrophone && device == nil {
            throw ValidationError("--audio camera records the microphone of the camera given by --device; give --device, or an ALSA device to --audio")
        }
        if input != nil {
            throw ValidationError("--audio goes with a live source (--device, --test-pattern, --test-scene): --input is read as fast as it can be, with no clock to put sound on")
        }
        if sound.audioCodec == .opus {
            // FLV carries AAC (and MP3), QuickTime's muxer no Opus: say so rather than lose the sound.
            let refusing = outputs.filter { target in
                target.lowercased().hasPrefix("rtmp://") || target.lowercased().hasPrefix("rtmps://")
                    || (carriesSound(target) && !MediaServerURL.looksLikeURL(target) && (files.format ?? ContainerFormat(fileName: target)) == .mov)
            } + (events.eventOutput.map { ContainerFormat(fileName: $0) == .mov } == true ? [events.eventOutput!] : [])
            if let first = refusing.first {
                throw ValidationError("--audio-codec opus: \(first) cannot carry Opus (RTMP's FLV and QuickTime take AAC); use --audio-codec aac, or MP4, Matroska, MPEG-TS, rtsp:// or srt://")
            }
            // RFC 7587 carries mono and stereo Opus only.
            if rtsp != nil, let channels = sound.audioChannels, channels > 2 {
                throw ValidationError("--audio-codec opus: --rtsp carries Opus in mono or stereo (RFC 7587), not \(channels) channels; use --audio-channels 1 or 2, or --audio-codec aac")
            }
        }
        let clipsCarrySound = events.eventOutput.map { ContainerFormat(fileName: $0) != .raw } ?? false
        if !outputs.contains(where: carriesSound) && !clipsCarrySound && http == nil && rtsp == nil {
            throw ValidationError("--audio: no output can carry sound; give an MP4, QuickTime, Matroska or MPEG-TS file (.mp4, .mov, .mkv, .ts), a media server (rtmp://, rtsp://, srt://), --event-output clips in one of those containers, the live view (--http) or --rtsp: raw .h264/.h265 files, stdout and tcp:// carry video only")
        }
    }

    /// The source and the encoder (AAC or Opus) of `--audio` (the encoder's track format describes the
    /// files' sound); nil without it. A microphone is opened and set up here, so that one that is missing, busy
    /// or refuses the format is a one-line error before any output exists.
    func makeSound() throws -> (source: any SoundSource, encoder: SoundEncoder)? {
        let codec = sound.audioCodec
        guard let name = sound.audio else { return nil }
        let source: any SoundSource
        if sound.isTestTone {
            source = TestToneSource(format: sound.testFormat)
        } else {
            let deviceName = try sound.isCameraMicrophone ? cameraMicrophone() : name
            do {
                source = try MicrophoneSource(device: deviceName, sampleRate: sound.audioRate, channels: sound.audioChannels,
                                              rates: codec.sampleRates)
            } catch let error as CaptureError {
                throw RecordingFailure.source(error)
            } catch let error as EncoderError {
                throw RecordingFailure.encoder(error)
            }
        }
        if !codec.sampleRates.contains(source.format.sampleRate) {
            throw RecordingFailure.source(CaptureError(.unsupportedFormat,
                "\(name) records at \(source.format.sampleRate) Hz, which \(codec.displayName) does not take; give --audio-rate \(codec.sampleRates.map(String.init).joined(separator: ", ")), or --audio-codec aac"))
        }
        let most = sound.mostBits(source.format)
        if let asked = sound.audioBitrate?.bitsPerSecond, asked > most {
            throw RecordingFailure.source(CaptureError(.unsupportedFormat,
                "--audio-bitrate \(asked): \(codec.displayName) carries at most \(most) bit/s at \(source.format) (what \(name) records); give less"))
        }
        do {
            return (source, try SoundEncoder(codec: codec, format: source.format, bitrate: sound.bitrate(for: source.format)))
        } catch let error as EncoderError {
            throw RecordingFailure.encoder(error)
        }
    }

    /// `--audio camera`: the microphone on the camera's USB device.
    private func cameraMicrophone() throws -> String {
        let camera = device ?? ""
        if let microphone = Microphones.of(camera: camera) { return microphone.alsaName }
        let why = Microphones.cameraUSBDevice(node: camera) == nil
            ? "\(camera) is not a USB camera" : "its USB device has no sound card"
        throw RecordingFailure.source(CaptureError(.sourceMissing,
            "--audio camera: no microphone belongs to \(camera) (\(why)); give the microphone's ALSA name to --audio (`camrec devices` lists them)"))
    }
}
