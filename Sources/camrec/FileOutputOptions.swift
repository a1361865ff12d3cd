import ArgumentParser
import Audio
import Bitstream
import Containers
import Glibc
import Outputs
import SystemSupport

extension ContainerFormat: ExpressibleByArgument {}

/// How recordings are named, cut and kept: for cron, systemd and long unattended runs.
struct FileOutputOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: "Start a new file at the first IDR after every SECONDS (each file plays on its own).")
    var segment: Double?

    @Flag(help: "Write NAME.pts beside each file: frame timestamps in mkvmerge's timecode format v2.")
    var saveTimestamps = false

    @Option(parsing: .unconditional, help: "Keep at most N files of this output's name pattern (counting the one being written); delete the oldest.")
    var keepFiles: Int?

    @Option(help: "Delete files of this output's name pattern older than DURATION (90s, 30m, 12h, 7d).")
    var keepFor: String?

    @Option(help: ArgumentHelp("Container of the files: raw (Annex-B), mp4, mov, mkv or ts. Default: from each file's extension (.mp4/.m4v, .mov, .mkv, .ts; anything else raw).", valueName: "format"))
    var format: ContainerFormat?

    func validate() throws {
        try OptionRange.checkSeconds(segment, "--segment", minimum: 0.5, inclusive: true)
        try OptionRange.check(keepFiles, "--keep-files", in: 1...1_000_000)
        if let keepFor, let seconds = RetentionPolicy.parseDuration(keepFor) {
            try OptionRange.checkSeconds(seconds, "--keep-for")
        } else if let keepFor {
            throw ValidationError("--keep-for \(keepFor): give a duration such as 3600, 90s, 30m, 12h or 7d")
        }
    }

    var retention: RetentionPolicy {
        RetentionPolicy(maximumFiles: keepFiles, maximumAgeSeconds: keepFor.flatMap(RetentionPolicy.parseDuration))
    }

    /// A file output for `target`, which may hold strftime fields, `{device}` and `{n}`.
    /// - Parameter audio: the recording's sound, for a container file.
    func makeOutput(_ target: String, codec: VideoCodec, device: String, overwrite: Bool, framesPerSecond: Double,
                    timingSEI: Bool = false, audio: AudioTrackFormat? = nil) throws -> RecordingFileOutput {
        let pattern = try OutputNamePattern(target)
        if (keepFiles != nil || keepFor != nil) && !pattern.hasPlaceholders {
            throw OutputError(.unwritable, "--keep-files/--keep-for need a name pattern such as 'cam-%Y%m%d-%H%M%S.h264' or 'cam-{n}.h264'")
        }
        if segment != nil && !pattern.hasPlaceholders {
            throw OutputError(.unwritable, "--segment needs a name that changes per file, e.g. 'cam-%H%M%S.h264' or 'cam-{n}.h264'")
        }
        let container = format ?? ContainerFormat(fileName: target)
        let makeContainer: ContainerWriterFactory = { format, sink in
            try ContainerWriters.make(format: format, codec: codec, sink: sink, framesPerSecond: framesPerSecond, audio: audio)
        }
        var configuration = RecordingFileOutput.Configuration(pattern: pattern, device: device, overwrite: overwrite,
                                                        segmentSeconds: segment, saveTimestamps: saveTimestamps,
                                                        retention: retention, format: container,
                                                        makeContainer: container == .raw ? nil : makeContainer,
                                                        timingSEICodec: timingSEI ? codec : nil)
        configuration.takesAudio = audio != nil && container != .raw
        return RecordingFileOutput(configuration: configuration)
    }
}

/// The name `{device}` stands for: the camera's stable /dev/v4l/by-id name when it has one.
func stableSourceName(device: String?, testPattern: Bool, testScene: Bool, input: String?) -> String {
    if testPattern { return "test-pattern" }
    if testScene { return "test-scene" }
    if let input { return input == "-" ? "stdin" : basename(of: input) }
    let node = device ?? "/dev/video0"
    let target = SystemFiles.resolved(node) ?? node
    for name in SystemFiles.entries(of: "/dev/v4l/by-id") where !name.hasPrefix(".") {
        if SystemFiles.resolved("/dev/v4l/by-id/" + name) == target { return name }
    }
    return basename(of: node)
}

private func basename(of path: String) -> String {
    let name = path.split(separator: "/").last.map(String.init) ?? path
    return name.isEmpty ? "camera" : name
}

/// `camrec: finished output=… frames=… idr=… duration=…s bytes=… dropped=…`: one line per finished
/// file, key=value, for logs and scripts. `errored=` (of the dropped, how many the camera delivered
/// corrupt) appears only when there were some.
/// A path as one key=value field of a summary line: as it is when plain, else in double quotes
/// with control characters, quotes and backslashes escaped, so a newline in a name can't split
/// the line that scripts and cron mail read.
func quotedField(_ text: String) -> String {
    let plain = text.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F && $0 != "\"" && $0 != "\\" }
    if plain && !text.isEmpty { return text }
    var quoted = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": quoted += "\\\""
        case "\\": quoted += "\\\\"
        case "\n": quoted += "\\n"
        case "\t": quoted += "\\t"
        case "\r": quoted += "\\r"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                let hex = String(scalar.value, radix: 16)
                quoted += "\\x" + (hex.count < 2 ? "0" + hex : hex)
            } else {
                quoted.unicodeScalars.append(scalar)
            }
        }
    }
    return quoted + "\""
}

func finishedFileLine(_ file: FinishedFile, dropped: UInt64, errored: UInt64 = 0) -> String {
    var fields = ["output=\(quotedField(file.path))", "frames=\(file.frames)", "idr=\(file.idrFrames)",
                  "duration=\(file.durationSeconds.decimalText(places: 3))s", "bytes=\(file.bytes)", "dropped=\(dropped)"]
    if errored > 0 { fields.append("errored=\(errored)") }
    if file.format != .raw { fields.append("format=\(file.format.rawValue)") }
    if file.clampedTimestamps > 0 { fields.append("clamped=\(file.clampedTimestamps)") }
    if let pts = file.timestampsPath { fields.append("timestamps=\(pts)") }
    if let error = file.error {
        fields.append("cut-short=\(error.kind)")
        // Say what is true: a file that could not be moved into place is not there.
        if access(file.path, F_OK) != 0 { fields.append("saved=no") }
    }
    return "camrec: finished " + fields.joined(separator: " ")
}
