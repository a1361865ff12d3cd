import ArgumentParser
import Audio
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

    func checkSound() throws {
        guard sound.isOn else { return }
        if input != nil {
            throw ValidationError("--audio goes with a live source (--device, --test-pattern, --test-scene): --input is read as fast as it can be, with no clock to put sound on")
        }
        let clipsCarrySound = events.eventOutput.map { ContainerFormat(fileName: $0) != .raw } ?? false
        if !outputs.contains(where: carriesSound) && !clipsCarrySound && http == nil {
            throw ValidationError("--audio: no output can carry sound; give an MP4, QuickTime, Matroska or MPEG-TS file (.mp4, .mov, .mkv, .ts), a media server (rtmp://, rtsp://, srt://), --event-output clips in one of those containers or the live view (--http): raw .h264/.h265 files, stdout and tcp:// carry video only")
        }
    }

    /// The AAC encoder of `--audio` (its track format describes the files' sound); nil without it.
    func makeSoundEncoder() throws -> AACEncoder? {
        guard sound.isOn else { return nil }
        do {
            return try AACEncoder(format: sound.format, bitrate: sound.bitrate)
        } catch let error as EncoderError {
            throw RecordingFailure.encoder(error)
        }
    }
}
