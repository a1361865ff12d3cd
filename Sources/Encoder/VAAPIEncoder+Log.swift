import SystemSupport

/// What the VA-API encoder tells the log: the configuration at start, the upload at the end.
extension VAAPIEncoder {
    /// What was chosen, for the log: "H264High on EncSlice, CBR 4000000 bit/s, upload: 1 CPU pass (…)".
    public var configuration: String {
        let profile = chosenProfile.map { VAAPIDevice.shortName($0.name) } ?? "no profile yet"
        return "\(profile) on \(usesLowPower ? "EncSliceLP (low power)" : "EncSlice"), \(rateControl), upload: \(onePass) "
            + "because \(uploadPath.reason)"
    }

    /// How a frame written in place reaches the GPU.
    var onePass: String {
        uploadIsDirect
            ? "1 CPU pass (source converted straight into the VA surface, vaDeriveImage)"
            : "1 CPU pass into a VA image, then the driver copies once more (vaPutImage)"
    }

    public var closingSummary: String? { "VA-API upload: \(uploadSummary)" }

    /// What the upload did, for the end of a recording: frames, CPU passes, bytes, time.
    public var uploadSummary: String {
        func frames(_ n: Int) -> String { n == 1 ? "1 frame" : "\(n) frames" }
        var parts: [String] = []
        let stats = backing?.statistics
        // Frames written in place whose derived mapping failed went through a VA image instead.
        let fallbacks = stats?.imageFallbacks ?? 0
        if framesWrittenInPlace - fallbacks > 0 || (framesCopied == 0 && fallbacks == 0) {
            parts.append("\(frames(framesWrittenInPlace - fallbacks)) took \(onePass)")
        }
        if let stats, fallbacks > 0 {
            parts.append("\(frames(fallbacks)) took 1 CPU pass into a VA image, then the driver copies once more (vaPutImage), "
                + "because \(stats.firstFallbackReason ?? "the derived mapping failed")")
        }
        if framesCopied > 0 {
            parts.append("\(frames(framesCopied)) took 2 CPU passes (source into pool memory, then a copy into a mapped surface"
                + (uploadIsDirect ? ")" : "; the driver copies once more, vaPutImage)"))
        }
        if let stats, let why = stats.firstFailure {
            parts.append("mapping a surface when a frame was taken failed \(stats.failures == 1 ? "once" : "\(stats.failures) times") (\(why))")
        }
        parts.append("\((Double(uploadedBytes) / 1_048_576).decimalText(places: 3)) MiB written into VA mappings")
        if uploadedFrames > 0 {
            let perFrame = { (ns: UInt64) in (Double(ns) / Double(self.uploadedFrames) / 1e6).decimalText(places: 3) }
            parts.append("upload \(perFrame(uploadCPUNanoseconds)) ms CPU per frame "
                + "(\(perFrame(uploadNanoseconds)) ms wall, waiting for the driver included, preemption left out)")
            // camrec's own mapping work is ~0.1 ms a frame (measured at 1280x720 with the test
            // driver); more means the driver works or waits behind the maps, which camrec can't see.
            if uploadNanoseconds / UInt64(uploadedFrames) > 1_000_000 {
                parts.append("the driver kept mapping busy for \(perFrame(uploadNanoseconds)) ms a frame: a driver that copies "
                    + "behind vaDeriveImage (iHD's linear shadow of a tiled surface) does a CPU pass of its own there, and one "
                    + "that holds its lock while the GPU encodes (Mesa) makes capture wait; '1 CPU pass' counts camrec's passes only")
            }
        }
        if packets.emptyPackets > 0 {
            parts.append("\(frames(packets.emptyPackets)) skipped by the driver (empty packets, dropped)")
        }
        if let released = stats?.releasedUnencoded, released > 0 {
            parts.append("\(released) surfaces released unencoded (buffers recycled without being encoded)")
        }
        return parts.joined(separator: "; ")
    }
}
