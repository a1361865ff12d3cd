import ArgumentParser
import Bitstream
import Containers
import Glibc
import NetStream
import Receiver
import Recorder
import SystemPackage

/// `camrec inspect FILE`: lists NAL units, summarises GOPs and the SPS, and checks the stream contract.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "List the NAL units of an H.264 or H.265 stream (raw Annex-B; H.264 also in MP4, QuickTime, Matroska or MPEG-TS) and check camrec's stream contract.",
        discussion: "Exits 0 when every NAL unit has a 4-byte start code, the parameter sets (SPS PPS; VPS SPS PPS in H.265) are the units right before every IDR slice, every random-access picture is an IDR and every picture is one slice NAL unit (or at most --slices), 1 when not (or, with --decode, when libavcodec reports an error in a picture), 65 when the file is neither. The codec is recognised from the first NAL unit unless --codec says. Without --decode only NAL units and headers are read, in bounded memory: slice data is not checked."
    )

    @Argument(help: "An H.264 or H.265 Annex-B file (H.264 also in MP4, QuickTime, Matroska or MPEG-TS), or - for raw Annex-B on stdin.")
    var file: String

    @Option(help: "The stream's codec: auto (from its first NAL unit), h264 or hevc.")
    var codec: CodecChoice = .auto

    @Flag(help: "Print only the summary and the verdict, not the NAL table.")
    var summary = false

    @Option(help: "Most slice NAL units a picture may have (what the stream was recorded with: camrec --slices).")
    var slices: Int = 1

    @Flag(help: "Also run libavcodec's H.264 or H.265 decoder over every picture and report its errors (holds one access unit at a time).")
    var decode = false

    func validate() throws {
        if !(1...1024).contains(slices) { throw ValidationError("--slices must be between 1 and 1024, got \(slices)") }
    }

    func run() throws {
        SignalService.unblock()
        if file != "-", ContainerReader.isContainer(path: file) {
            return try inspectContainer()
        }
        let descriptor: FileDescriptor
        if file == "-" {
            descriptor = .standardInput
        } else {
            do {
                descriptor = try FileDescriptor.open(FilePath(file), .readOnly, retryOnInterrupt: true)
            } catch let error as Errno {
                switch error {
                case .noSuchFileOrDirectory:
                    printError("\(file) does not exist")
                    throw ReportedFailure(status: .sourceMissing)
                case .permissionDenied:
                    printError("cannot read \(file): permission denied; check its mode and owner (ls -l), or run as a user who may read it")
                    throw ReportedFailure(status: .permissionDenied)
                default:
                    printError("cannot read \(file): \(error)")
                    throw ReportedFailure(status: .invalidInput)
                }
            }
        }
        defer { if file != "-" { try? descriptor.close() } }
        var inspector = StreamInspector(maxSlicesPerPicture: slices, codec: codec.codec)
        var decoding = decode ? try DecodeCheck(codec: codec.codec) : nil
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n: Int
            do {
                n = try chunk.withUnsafeMutableBytes { try descriptor.read(into: $0, retryOnInterrupt: true) }
            } catch {
                printError("reading \(file) failed: \(error)")
                throw ReportedFailure(status: .invalidInput)
            }
            if n == 0 { break }
            inspector.append(chunk[0..<n])
            try decoding?.append(chunk[0..<n])
        }
        let report = inspector.finish()
        if report.nalUnitCount == 0 {
            print(report.render(verbose: !summary))
            printError("\(file) is not H.264 or H.265: no Annex-B start codes found")
            throw ReportedFailure(status: .invalidInput)
        }
        if (report.codec == .h264 ? report.sequenceParameterSet == nil : report.hevc.sps == nil) && report.idrCount == 0 {
            // A start code can turn up in any data; without an SPS nothing says this is video.
            print(report.render(verbose: !summary))
            printError("\(file) is not H.264 or H.265: \(report.nalUnitCount) start code\(report.nalUnitCount == 1 ? "" : "s") but no sequence parameter set (SPS) and no IDR picture")
            throw ReportedFailure(status: .invalidInput)
        }
        let decoded = try decoding?.finish()
        print(report.render(verbose: !summary))
        if let decoded {
            print(decoded.verdict(pictures: report.frameCount))
        } else {
            print("checked: NAL units, start codes, parameter sets and slice headers; slice data not decoded (add --decode)")
        }
        if !report.contractHolds || (decoded.map { !$0.isClean(pictures: report.frameCount) } ?? false) {
            throw ReportedFailure(status: .contractBroken)
        }
    }
}
