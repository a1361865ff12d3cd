import Bitstream
import CFFmpeg
import Glibc
import Libav

/// Reads the H.264 or H.265 samples of an MP4, QuickTime, Matroska or MPEG-TS file through libavformat, for
/// `camrec inspect`: each sample as Annex-B (4-byte start codes put where the container had
/// lengths), with the container's own key-frame flag and times.
///
/// libavformat's parsers are turned off (`fflags=noparse`), so a key-frame flag is what the
/// container says (MP4 sync samples, Matroska's keyframe bit, MPEG-TS's random-access indicator),
/// never what a parser guessed from the bitstream.
public final class ContainerReader {
    public struct Sample {
        /// The sample's NAL units as Annex-B.
        public var annexB: [UInt8]
        public var isKey: Bool
        /// Presentation and decode times in seconds, when the container has them.
        public var presentationSeconds: Double?
        public var decodeSeconds: Double?
        /// The sample's size in the file.
        public var byteCount: Int
    }

    /// What the file's sample entry (avcC or hvcC / CodecPrivate) holds.
    public struct SampleEntry: Equatable {
        /// "avcC" or "hvcC".
        public var name: String
        public var lengthSize: Int
        /// The parameter sets it carries, by kind, in its order.
        public var parameterSets: [ParameterSetKind: [[UInt8]]]
    }

    public struct ReadError: Error, CustomStringConvertible {
        public let description: String
    }

    public static let sampleLimit = 64 << 20
    public let path: String
    /// libavformat's name for what it found ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "mpegts").
    public let formatName: String
    public let codec: VideoCodec
    /// MP4's sample entry tag ("avc1", "hvc1", "hev1"), when the container has one.
    public let codecTag: String?
    /// Nil for Annex-B in the container (MPEG-TS).
    public let sampleEntry: SampleEntry?
    /// The file's duration as the container states it, when it does.
    public let durationSeconds: Double?
    /// The file's sound tracks, as "AAC, 48000 Hz, 1 channel" (not inspected further).
    public let soundTracks: [String]

    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let packet: UnsafeMutablePointer<AVPacket>
    private let streamIndex: Int32
    private let timeBase: AVRational
    /// MPEG-TS: whether each PES of the video stream starts with the random-access indicator,
    /// read from the TS packets (libavformat marks TS key frames only through its parser).
    private var randomAccess: [Bool]?
    private var samplesRead = 0

    /// Whether the file's first bytes are a container's rather than H.264's: an MP4 box, the EBML
    /// magic, or MPEG-TS sync bytes every 188. Anything else is read as raw Annex-B.
    public static func isContainer(path: String) -> Bool {
        // Only a regular file is looked into: reading a FIFO or a device would take its bytes away.
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, let file = fopen(path, "rb") else { return false }
        defer { fclose(file) }
        var head = [UInt8](repeating: 0, count: 377)
        let n = fread(&head, 1, head.count, file)
        guard n >= 12 else { return false }
        let boxType = String(decoding: head[4..<8], as: UTF8.self)
        if ["ftyp", "moov", "moof", "styp", "free", "wide", "mdat"].contains(boxType) { return true }
        if head[0..<4] == [0x1A, 0x45, 0xDF, 0xA3] { return true }
        return n >= 377 && head[0] == 0x47 && head[188] == 0x47 && head[376] == 0x47
    }

    public init(path: String) throws {
        self.path = path
        var made: UnsafeMutablePointer<AVFormatContext>?
        var options: OpaquePointer?
        av_dict_set(&options, "fflags", "+noparse", 0)
        let opened = avformat_open_input(&made, path, nil, &options)
        av_dict_free(&options)
        guard opened >= 0, let made else {
            throw ReadError(description: "\(path): libavformat cannot read it: \(libavErrorDescription(opened))")
        }
        context = made
        var index = av_find_best_stream(made, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        if index < 0 {
            // MPEG-TS may announce its streams only in its packets.
            _ = avformat_find_stream_info(made, nil)
            index = av_find_best_stream(made, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        }
        guard index >= 0, let stream = made.pointee.streams[Int(index)] else {
            var c: UnsafeMutablePointer<AVFormatContext>? = made
            avformat_close_input(&c)
            throw ReadError(description: "\(path) holds no video stream")
        }
        let parameters = stream.pointee.codecpar.pointee
        guard parameters.codec_id == AV_CODEC_ID_H264 || parameters.codec_id == AV_CODEC_ID_HEVC else {
            let name = String(cString: avcodec_get_name(parameters.codec_id))
            var c: UnsafeMutablePointer<AVFormatContext>? = made
            avformat_close_input(&c)
            throw ReadError(description: "\(path) holds \(name) video, not H.264 or H.265")
        }
        codec = parameters.codec_id == AV_CODEC_ID_HEVC ? .hevc : .h264
        let tag = withUnsafeBytes(of: parameters.codec_tag.littleEndian) { Array($0) }
        codecTag = tag.allSatisfy({ (0x20...0x7E).contains($0) }) ? String(decoding: tag, as: UTF8.self) : nil
        streamIndex = index
        timeBase = stream.pointee.time_base
        formatName = String(cString: made.pointee.iformat.pointee.name)
        let extradata = parameters.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(max(0, parameters.extradata_size)))) } ?? []
        sampleEntry = codec == .h264 ? Self.parseAVCC(extradata) : Self.parseHVCC(extradata)
        durationSeconds = made.pointee.duration > 0 ? Double(made.pointee.duration) / Double(AV_TIME_BASE) : nil
        soundTracks = (0..<Int(made.pointee.nb_streams)).compactMap { i in
            guard let parameters = made.pointee.streams[i]?.pointee.codecpar.pointee,
                  parameters.codec_type == AVMEDIA_TYPE_AUDIO else { return nil }
            let name = String(cString: avcodec_get_name(parameters.codec_id)).uppercased()
            let channels = Int(parameters.ch_layout.nb_channels)
            // MPEG-TS states them only in the audio's own headers, which are not read here.
            guard parameters.sample_rate > 0, channels > 0 else { return "\(name) (rate and channels in its packets)" }
            return "\(name), \(parameters.sample_rate) Hz, \(channels) channel\(channels == 1 ? "" : "s")"
        }
        packet = av_packet_alloc()
        if formatName == "mpegts" {
            randomAccess = Self.randomAccessMarks(path: path, pid: Int(stream.pointee.id))
        }
    }

    /// For each PES of `pid` in an MPEG-TS file: does its first TS packet carry the adaptation
    /// field's random_access_indicator (ISO/IEC 13818-1, 2.4.3.5)?
    static func randomAccessMarks(path: String, pid: Int) -> [Bool] {
        guard let file = fopen(path, "rb") else { return [] }
        defer { fclose(file) }
        var marks: [Bool] = []
        var packet = [UInt8](repeating: 0, count: 188)
        while fread(&packet, 1, 188, file) == 188 {
            guard packet[0] == 0x47 else { break }
            let packetPID = Int(packet[1] & 0x1F) << 8 | Int(packet[2])
            guard packetPID == pid, packet[1] & 0x40 != 0 else { continue }  // payload_unit_start_indicator
            let hasAdaptation = packet[3] & 0x20 != 0
            marks.append(hasAdaptation && packet[4] > 0 && packet[5] & 0x40 != 0)
        }
        return marks
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        avformat_close_input(&context)
    }

    /// The next video sample, or nil at the end of what can be read.
    public func nextSample() throws -> Sample? {
        guard let context else { return nil }
        while true {
            av_packet_unref(packet)
            let status = av_read_frame(context, packet)
            if status == camrec_AVERROR_EOF { return nil }
            guard status >= 0 else {
                throw ReadError(description: "\(path): reading stopped: \(libavErrorDescription(status))")
            }
            guard packet.pointee.stream_index == streamIndex else { continue }
            // libavformat holds the sample already (it grows it only as the file delivers); camrec's
            // copies stop at a size no H.264 or H.265 picture reaches (8K 4:2:0 uncompressed is 48 MiB).
            guard Int(packet.pointee.size) <= Self.sampleLimit else {
                throw ReadError(description: "\(path): sample \(samplesRead) is \(packet.pointee.size) bytes, more than "
                    + "any picture (\(Self.sampleLimit >> 20) MiB); the file is damaged or not what it claims")
            }
            let bytes = packet.pointee.data.map { Array(UnsafeBufferPointer(start: $0, count: Int(max(0, packet.pointee.size)))) } ?? []
            let annexB: [UInt8]
            if let entry = sampleEntry {
                do {
                    annexB = try AVCC.annexB(fromAVCC: bytes, lengthSize: entry.lengthSize)
                } catch {
                    throw ReadError(description: "\(path): a sample's NAL lengths do not add up (\(error))")
                }
            } else {
                annexB = bytes
            }
            var isKey = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
            if let randomAccess {
                isKey = samplesRead < randomAccess.count && randomAccess[samplesRead]
            }
            samplesRead += 1
            return Sample(annexB: annexB, isKey: isKey,
                          presentationSeconds: seconds(packet.pointee.pts), decodeSeconds: seconds(packet.pointee.dts),
                          byteCount: bytes.count)
        }
    }

    private func seconds(_ timestamp: Int64) -> Double? {
        guard timestamp != camrec_AV_NOPTS_VALUE, timeBase.den != 0 else { return nil }
        return Double(timestamp) * Double(timeBase.num) / Double(timeBase.den)
    }

    /// avcC (ISO/IEC 14496-15, 5.3.3.1); nil when the extradata is not one (Annex-B, or none).
    static func parseAVCC(_ data: [UInt8]) -> SampleEntry? {
        guard data.count >= 7, data[0] == 1 else { return nil }
        var reader = EntryReader(data: data, position: 5)
        guard let sps = reader.units(countMask: 0x1F), let pps = reader.units(countMask: 0xFF) else { return nil }
        return SampleEntry(name: "avcC", lengthSize: Int(data[4] & 3) + 1, parameterSets: [.sps: sps, .pps: pps])
    }

    /// hvcC (ISO/IEC 14496-15, 8.3.3.1): 22 bytes of profile and format fields, then arrays of NAL
    /// units by type; nil when the extradata is not one.
    static func parseHVCC(_ data: [UInt8]) -> SampleEntry? {
        guard data.count >= 23, data[0] == 1 else { return nil }
        var reader = EntryReader(data: data, position: 23)
        var sets: [ParameterSetKind: [[UInt8]]] = [:]
        for _ in 0..<Int(data[22]) {
            guard reader.position < data.count else { return nil }
            let type = data[reader.position] & 0x3F
            reader.position += 1
            guard let units = reader.units(countBytes: 2) else { return nil }
            if case .parameterSet(let kind) = VideoCodec.hevc.role(ofType: type) { sets[kind, default: []] += units }
        }
        return SampleEntry(name: "hvcC", lengthSize: Int(data[21] & 3) + 1, parameterSets: sets)
    }

    /// Walks the count-then-(16-bit length, unit) lists of a sample entry, never past its end.
    private struct EntryReader {
        let data: [UInt8]
        var position: Int

        /// A one-byte count (masked), then the units.
        mutating func units(countMask: UInt8) -> [[UInt8]]? {
            guard position < data.count else { return nil }
            let count = Int(data[position] & countMask)
            position += 1
            return units(count)
        }

        /// A big-endian count of `countBytes`, then the units.
        mutating func units(countBytes: Int) -> [[UInt8]]? {
            guard position + countBytes <= data.count else { return nil }
            let count = data[position..<(position + countBytes)].reduce(0) { $0 << 8 | Int($1) }
            position += countBytes
            return units(count)
        }

        private mutating func units(_ count: Int) -> [[UInt8]]? {
            var found: [[UInt8]] = []
            for _ in 0..<count {
                guard position + 2 <= data.count else { return nil }
                let size = Int(data[position]) << 8 | Int(data[position + 1])
                guard position + 2 + size <= data.count else { return nil }
                found.append(Array(data[(position + 2)..<(position + 2 + size)]))
                position += 2 + size
            }
            return found
        }
    }
}
