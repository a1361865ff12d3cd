import Bitstream
import Containers
import Recorder
import SystemSupport

extension InspectCommand {
    /// `camrec inspect` on an MP4, QuickTime, Matroska or MPEG-TS file: the H.264 or H.265 inside is judged
    /// as a raw stream is (start codes put where the container has NAL lengths), and the container
    /// itself is checked: key-frame marks, times, the sample entry, a cut-off end.
    func inspectContainer() throws {
        let reader: ContainerReader
        do {
            reader = try ContainerReader(path: file)
        } catch {
            printError("\(error)")
            throw ReportedFailure(status: .invalidInput)
        }
        var inspector = StreamInspector(maxSlicesPerPicture: slices, codec: reader.codec,
                                        delimitedByContainer: reader.formatName.contains("mpegts"))
        var decoding = decode ? try DecodeCheck(codec: reader.codec) : nil
        var container = ContainerInspection(formatName: reader.formatName, codec: reader.codec, sampleEntry: reader.sampleEntry,
                                            listLimit: summary ? 0 : 1_000_000)
        var readError: String?
        do {
            while let sample = try reader.nextSample() {
                inspector.append(sample.annexB)
                try decoding?.append(sample.annexB[...])
                container.add(sample)
            }
        } catch {
            readError = "\(error)"
        }
        let report = inspector.finish()
        let end = reader.formatName.contains("mp4") ? ContainerInspection.mp4End(path: file) : nil
        var problems = container.problems(end: end, path: file)
        // In a file cut short the last sample read is cut too; the cut is the problem to report.
        if let readError, end?.cutBox == nil { problems.append(readError) }
        let decoded = try decoding?.finish()

        for line in container.lines { print(line) }
        print(report.render(verbose: !summary))
        var facts = ["container: \(reader.formatName)", "\(container.samples) samples"]
        if let first = container.firstSeconds, let last = container.lastSeconds, container.samples > 1 {
            let interval = (last - first) / Double(container.samples - 1)
            facts.append("\((reader.durationSeconds ?? (last - first + interval)).decimalText(places: 3, trimmingZeros: true)) s")
        }
        facts.append("\(container.keySamples.count) marked key")
        if let entry = reader.sampleEntry {
            let tag = reader.codecTag.map { "\($0), " } ?? ""
            facts.append("sample entry \(tag)\(entry.name) (\(entry.lengthSize)-byte NAL lengths; start codes put in their place for the checks above)")
        } else {
            facts.append("Annex-B inside, no sample entry")
        }
        print(facts.joined(separator: ", "))
        for sound in reader.soundTracks { print("sound: \(sound) (a track beside the video; not checked here)") }
        if problems.isEmpty {
            var held = ["every IDR and only IDRs marked key", "decode times rise"]
            if container.sampleEntryMatchesStream == true {
                held.append("the sample entry's \(reader.codec.parameterSetOrder.map(\.rawValue).joined(separator: "/")) are the stream's")
            }
            if end != nil { held.append("the file ends on a whole box") }
            print("container: OK — " + held.joined(separator: ", "))
        } else {
            print("container: BROKEN — " + problems.joined(separator: "; "))
        }
        if let decoded {
            print(decoded.verdict(pictures: report.frameCount))
        } else {
            print("checked: the container's samples and marks, NAL units, parameter sets and slice headers; slice data not decoded (add --decode)")
        }
        if !problems.isEmpty || !report.contractHolds || (decoded.map { !$0.isClean(pictures: report.frameCount) } ?? false) {
            throw ReportedFailure(status: .contractBroken)
        }
    }
}
