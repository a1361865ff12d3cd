import ArgumentParser
import Audio
import Capture
import Frames
import Recorder

/// `camrec devices`: the cameras camrec can record from, with their formats, sizes and rates.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List V4L2 capture devices with their formats, sizes and frame rates.",
        discussion: """
        Without --device, lists every capture node with one line per pixel format. With --device, shows \
        one node in detail: every size of every format with its frame rates. Formats marked '-' have no \
        converter in camrec (MJPEG is decoded and usable); camrec tries libv4lconvert for them when one is \
        asked for with --pixel-format, or when the camera offers nothing else. Nodes that do not capture \
        video (outputs, metadata, radio) are named at the end of the list.
        """
    )

    @Option(help: "Show this device in detail.")
    var device: String?

    func run() throws {
        SignalService.unblock()
        if let device {
            let info: V4L2DeviceInfo
            do {
                info = try V4L2DeviceInfo.inspect(path: device)
            } catch {
                printError(error.message)
                throw ReportedFailure(status: RecordingFailure.source(error).exitStatus)
            }
            guard info.identity.capabilities.canCaptureVideo else {
                printError("\(device) (\(info.identity.card), driver \(info.identity.driver)) is "
                           + "\(info.identity.capabilities.kind), not a video capture device")
                throw ReportedFailure(status: .notACaptureDevice)
            }
            print(header(info))
            print(defaultChoice(info))
            for format in info.formats { print(formatLines(format, detailed: true), terminator: "") }
            return
        }
        let all = V4L2DeviceInfo.all()
        let capture = all.filter { $0.identity.capabilities.canCaptureVideo }
        if capture.isEmpty {
            printMicrophones()
            printError("no video capture devices found (is a camera plugged in? are /dev/video* readable?)")
            throw ReportedFailure(status: .sourceMissing)
        }
        for (n, info) in capture.enumerated() {
            if n > 0 { print("") }
            print(header(info))
            print(defaultChoice(info))
            for format in info.formats { print(formatLines(format, detailed: false), terminator: "") }
        }
        let others = all.filter { !$0.identity.capabilities.canCaptureVideo }
        if !others.isEmpty {
            print("")
            print("not capture devices: " + others.map { "\($0.path) (\($0.identity.capabilities.kind.dropArticle))" }
                .joined(separator: ", "))
        }
        printMicrophones()
    }

    /// The ALSA capture devices, as --audio names them.
    private func printMicrophones() {
        let microphones = Microphones.all()
        print("")
        guard !microphones.isEmpty else {
            print("no microphones (ALSA capture devices) found")
            return
        }
        print("microphones (give one to --audio):")
        let width = microphones.map(\.alsaName.count).max() ?? 0
        for microphone in microphones {
            let padding = String(repeating: " ", count: width - microphone.alsaName.count)
            print("  \(microphone.alsaName)\(padding)  \(microphone.name), card \(microphone.card) device \(microphone.device)"
                  + (microphone.usbDevice == nil ? "" : ", USB"))
        }
    }

    private func header(_ info: V4L2DeviceInfo) -> String {
        let camera = CameraIdentity.of(node: info.path, busInfo: info.identity.busInfo)
        return "\(info.path): \(info.identity.card)\n  driver \(info.identity.driver), bus \(info.identity.busInfo)"
            + (info.isMultiplanar ? ", multi-planar API" : "")
            + "\n  known again after an unplug \(camera.matchedBy)"
            + (Microphones.of(camera: info.path).map { "\n  its microphone: \($0.alsaName) (--audio camera)" } ?? "")
    }

    /// What `camrec --device PATH` would record with no other options.
    private func defaultChoice(_ info: V4L2DeviceInfo) -> String {
        if let choice = try? V4L2FormatChooser.choose(from: info.formats, request: V4L2FormatRequest()) {
            let rate = choice.interval.map { "\($0) fps" } ?? "the device's rate"
            return "  camrec records \(choice.pixelFormat) \(choice.size) @ \(rate) by default"
        }
        return "  camrec has no converter for any format this device offers; it tries libv4lconvert when recording"
    }

    private func formatLines(_ format: V4L2FormatOffer, detailed: Bool) -> String {
        // H.264/H.265 are recorded as the camera sends them (--pixel-format H264/HEVC: --encoder camera).
        let usable = format.pixelFormat.isRecordable || format.pixelFormat.isCompressedVideo
        let mark = usable ? " " : "-"
        let name = format.name.isEmpty ? (format.pixelFormat.commonName ?? "") : format.name
        let code = format.pixelFormat.description.padding(5)
        var text = "  \(mark) \(code) \(name)"
        if format.isCompressed { text += " (compressed)" }
        if format.pixelFormat.isCompressedVideo { text += " (recorded as it is: --pixel-format \(format.pixelFormat))" }
        if format.isEmulated { text += " (emulated)" }
        if !detailed {
            text += ": \(format.sizes.description)"
            if let fastest = fastestRate(format.sizes) { text += " (up to \(fastest) fps)" }
            return text + "\n"
        }
        text += "\n"
        switch format.sizes {
        case .discrete(let list):
            for offer in list {
                text += "        \(offer.size.description.padding(10)) \(offer.intervals.description)\n"
            }
        case .range, .unknown:
            text += "        \(format.sizes.description)\n"
        }
        return text
    }

    private func fastestRate(_ sizes: V4L2FrameSizes) -> String? {
        guard case .discrete(let list) = sizes else { return nil }
        let rates = list.flatMap { offer -> [Double] in
            switch offer.intervals {
            case .discrete(let l): return l.map(\.framesPerSecond)
            case .range(let shortest, _): return [shortest.framesPerSecond]
            case .unknown: return []
            }
        }
        guard let best = rates.max() else { return nil }
        return V4L2Fraction(framesPerSecond: best).description
    }
}

// Lives here because `--pixel-format` (RecordCommand) and this command are the CLI's
// two users of V4L2 formats: a bad name is a usage error (64) from the parser.
extension V4L2PixelFormat: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(name: argument)
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }

    fileprivate var dropArticle: String {
        for article in ["a ", "an "] where hasPrefix(article) { return String(dropFirst(article.count)) }
        return self
    }
}
