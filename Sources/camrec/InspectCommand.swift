import ArgumentParser
import Bitstream
import Glibc
import Recorder
import SystemPackage

/// `camrec inspect FILE`: lists NAL units, summarises GOPs and the SPS, and checks the stream contract.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "List the NAL units of an H.264 Annex-B stream and check camrec's stream contract.",
        discussion: "Exits 0 when every NAL unit has a 4-byte start code, SPS and PPS are the two units right before every IDR slice and every picture is one slice NAL unit (or at most --slices), 1 when not."
    )

    @Argument(help: "An Annex-B H.264 file, or - for stdin.")
    var file: String

    @Flag(help: "Print only the summary and the verdict, not the NAL table.")
    var summary = false

    @Option(help: "Most slice NAL units a picture may have (what the stream was recorded with: camrec --slices).")
    var slices: Int = 1

    func validate() throws {
        if !(1...1024).contains(slices) { throw ValidationError("--slices must be between 1 and 1024, got \(slices)") }
    }

    func run() throws {
        SignalWatcher.unblock()
        let descriptor: FileDescriptor
        if file == "-" {
            descriptor = .standardInput
        } else {
            do {
                descriptor = try FileDescriptor.open(FilePath(file), .readOnly, retryOnInterrupt: true)
            } catch let error as Errno {
                printError(error == .noSuchFileOrDirectory ? "\(file) does not exist" : "cannot read \(file): \(error)")
                throw ReportedFailure(status: .sourceMissing)
            }
        }
        defer { if file != "-" { try? descriptor.close() } }
        var inspector = StreamInspector(maxSlicesPerPicture: slices)
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
        }
        let report = inspector.finish()
        print(report.render(verbose: !summary))
        if report.nalUnitCount == 0 {
            printError("\(file) holds no H.264 NAL units (no Annex-B start codes found)")
            throw ReportedFailure(status: .invalidInput)
        }
        if !report.contractHolds { throw ReportedFailure(status: .contractBroken) }
    }
}
