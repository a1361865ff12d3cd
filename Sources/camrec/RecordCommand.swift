import Hub
import ArgumentParser
import Bitstream
import Containers
import Capture
import Frames
import Encoder
import HTTPServer
import Glibc
import Logging
import NetStream
import Outputs
import Recorder
import Libav
import Threading
import Synchronization
import SystemSupport

/// The default command: record from one source to one or more outputs.
struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record H.264 or H.265 (the default command: `camrec --test-pattern --frames 200 out.h264`)."
    )

    @Option(help: "Capture from this V4L2 device (the default source when no other is given).")
    var device: String?

    @Flag(help: "Record a built-in moving test pattern, paced in real time like a camera.")
    var testPattern = false

    @Flag(help: "Record a built-in still scene for testing motion and events, paced in real time: a noisy room in which, every 30 s, an object crosses from 10 s to 15 s and the lights are on from 20 s to 30 s; the test pattern's frame counter is burned in.")
    var testScene = false

    @Option(help: "Read raw frames from FILE, or - for stdin, as fast as the encoder takes them.")
    var input: String?

    @Option(help: "Format of --input: raw frames in yuyv, uyvy, nv12 or i420, or mjpeg (concatenated JPEGs, as ffmpeg -f mjpeg writes them, decoded as an MJPEG camera's; --size is then read from the first JPEG).")
    var inputFormat: InputFormat = .yuyv

    @Option(help: "Camera pixel format for --device: a fourcc (YUYV, NV12, YU12, RGB3, …) or i420, rgb24, grey. Default: the cheapest to convert that the camera offers (see `camrec devices`). H264 or HEVC records the camera's own stream as it is (--encoder camera).")
    var pixelFormat: V4L2PixelFormat?

    @Option(help: "Frame size WxH (default 1280x720 for the test pattern and scene; required with --input).")
    var size: FrameSize?

    @Option(parsing: .unconditional, help: "Frames per second (default 30).")
    var fps: Double?

    @Option(parsing: .unconditional, help: "Stop after N frames.")
    var frames: Int?

    @Option(parsing: .unconditional, help: "Stop after this many seconds of video.")
    var duration: Double?

    @Option(parsing: .unconditional, help: "An IDR (with SPS+PPS before it) every N frames (default: one per second of --fps).")
    var keyframeInterval: Int?

    @Option(help: "Encoder: auto, software (libx264), vaapi, or camera: a camera that sends H.264 or H.265 itself (--pixel-format H264 or HEVC, which chooses it), recorded as it is with no decoding or encoding; its IDR period, forced IDRs and bit rate through its V4L2 controls where it has them.")
    var encoder: EncoderChoice = .auto

    @Option(help: ArgumentHelp("VA-API device for --encoder vaapi/auto: a DRM render node (default: the first /dev/dri/renderD*). A value starting with ':' is an X11 display, for testing without a GPU.", valueName: "path"))
    var vaapiDevice: String?

    @Option(help: "Target bit rate in bits per second; k and M suffixes work (4M). Default: about 0.1 bit per pixel.")
    var bitrate: Bitrate?

    @Option(parsing: .unconditional, help: "Constant quantiser (0-51) instead of a bit rate.")
    var qp: Int?

    @Option(help: "H.264 profile: baseline, main or high.")
    var profile: H264Profile = .high

    @Option(help: "Codec of the outputs whose name does not say (stdout, TCP, --listen, containers, servers, --http): h264 (libx264 or VA-API) or hevc (H.265, libx265); default h264. A raw file's extension decides its own (.h264/.264, .h265/.hevc/.265); outputs of both codecs make two encodings from one capture.")
    var codec: CodecChoice = .auto

    @Option(help: "libx264/libx265 speed preset: ultrafast, superfast, veryfast, faster, fast, medium, …")
    var preset: String = "veryfast"

    @Option(parsing: .unconditional, help: "Slice NAL units per picture (default 1). More slices let libx264 use sliced threads, but receivers that hand one NAL unit at a time to their decoder then see half pictures.")
    var slices: Int = 1

    @Option(parsing: .unconditional, help: "libx264 threads with one slice per picture: 1 (the default) adds no latency; N > 1 uses frame threads, about one frame of delay each; 0 lets x264 choose.")
    var threads: Int = 1

    @Flag(help: "Put camrec's timing SEI (capture and send times, sequence number and size of the access unit) at the head of every access unit of the raw outputs (files, stdout, TCP), for `camrec receive`'s latency figures and its check of cut access units. The stream is then not bare: a receiver that reads the first NAL unit of an access unit as its SPS or slice (seed 001) drops every picture. Containers and media servers never carry it.")
    var timingSei = false

    @Flag(help: "Keep the SEI and AUD units the encoder writes (HRD buffering period and picture timing, recovery point): [AUD] [SEI …] SPS PPS IDR. By default every output gets a bare stream, parameter sets and slices only.")
    var encoderSei = false

    /// The default since the stream became bare; still accepted so scripts that give it keep working.
    @Flag(help: .hidden)
    var noTimingSei = false

    @Flag(help: "Replace an existing output file. Without it camrec never replaces a file: a fixed name that exists fails with status 76; a name from a pattern that clashes gets -2, -3, … before its extension.")
    var overwrite = false

    @OptionGroup(title: "Files, segments and retention")
    var files: FileOutputOptions

    @OptionGroup(title: "Events")
    var events: EventOptions

    @OptionGroup(title: "Sound")
    var sound: AudioOptions

    @Option(parsing: .unconditional, help: "If the camera is busy (another camrec is recording from it), wait up to SECONDS for it instead of exiting with status 70.")
    var wait: Double?

    @Option(help: ArgumentHelp("When the camera goes away (unplugged, a USB reset, a stream that stalls): exit (the default: the file ends with every frame before the loss, status 71), or wait for the same camera (by USB serial, else port; off USB its bus info) under whatever /dev/videoN it comes back as, end the files at the loss and record on into the next ones while TCP receivers, media servers and browsers stay connected; wait=SECONDS gives up after that long (status 71).", valueName: "exit|wait[=SECONDS]"))
    var onCameraLost: CameraLossPolicy = .exit

    @Option(parsing: .unconditional, help: ArgumentHelp("How long the camera may deliver no frame before it counts as stalled (status 72; with --on-camera-lost wait, a loss to wait out): 2 s or four frame intervals, whichever is longer, unless given; 0.5 to 3600, and never under two frame intervals (for a camera that pauses on purpose: a long exposure, an external trigger).", valueName: "SECONDS"))
    var stallTimeout: Double?

    @Option(help: ArgumentHelp("With --on-camera-lost wait: run CMD (with /bin/sh) each time the camera goes away or comes back; it gets CAMREC_CAMERA_EVENT (lost or returned), CAMREC_DEVICE and CAMREC_CAMERA_DETAIL in its environment.", valueName: "CMD"))
    var onCameraChange: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .notice

    @Option(help: ArgumentHelp("Serve the stream to the receivers that connect to [HOST:]PORT (same as the output tcp://[HOST]:PORT?listen); may be given more than once.", valueName: "[HOST:]PORT"))
    var listen: [String] = []

    @Option(help: ArgumentHelp("Serve the live view (a page with live video: WebRTC through POST /whep when GStreamer's webrtcbin is installed, with the sound as Opus, else fragmented MP4 over a WebSocket, kept within 0.5 s of live after network stalls) over HTTP on [HOST:]PORT; HOST is 127.0.0.1 unless given. Also /live.m3u8 (HLS: fMP4 segments from IDRs, for players without Media Source Extensions), /snapshot.jpg (the newest frame) and /stream.mjpg (MJPEG over HTTP, multipart/x-mixed-replace, at most ?fps=N pictures a second: an MJPEG camera's own JPEGs, else one JPEG a frame while someone watches), /api/status and /metrics.", valueName: "[HOST:]PORT"))
    var http: String?

    @Option(help: ArgumentHelp("With --http: the STUN server WebRTC viewers' connections learn this machine's public address from (stun://HOST:PORT), for viewers beyond this network; without it, only this machine's own addresses are offered.", valueName: "URL"))
    var stun: String?

    @Option(help: ArgumentHelp("With --http: a TURN server that relays WebRTC to viewers no direct path reaches (turn://USER:PASSWORD@HOST:PORT, or turns:// over TLS).", valueName: "URL"))
    var turn: String?

    @Option(help: ArgumentHelp("Serve the stream over RTSP (camrec as a network camera) on [HOST:]PORT; HOST is 127.0.0.1 unless given. rtsp://HOST:PORT/ is the default encoding, /h264 and /h265 name one; RTP over TCP (interleaved) or UDP; with --audio the sound is the second track.", valueName: "[HOST:]PORT"))
    var rtsp: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("With --rtsp: the largest RTP packet, header included (default 1400); larger NAL units are fragmented (FU-A, FU).", valueName: "BYTES"))
    var rtspMtu: Int?

    @Option(help: ArgumentHelp("With --rtsp: clients that ask for multicast get RTP on this IPv4 group (224.0.0.0 to 239.255.255.255), one send per packet for all of them; PORT (default 5004) and PORT+1 (RTCP) for the first encoding, PORT+2 for the next; TTL 1 (the local network); the picture only.", valueName: "GROUP[:PORT]"))
    var rtspMulticast: String?

    @Option(help: ArgumentHelp("With --http or --rtsp: only a client that gives the user name and password in FILE's first line (user:password) may watch (HTTP Basic; RTSP Digest or Basic); needed to serve beyond loopback.", valueName: "FILE"))
    var httpAuthFile: String?

    @Flag(help: "With --http or --rtsp on an address other machines reach: serve without a password (anyone who can reach the port can watch).")
    var httpInsecure = false

    @Option(help: ArgumentHelp("Write camrec's process id to FILE while it records (for camrec trigger --pid-file, systemd's PIDFile=, scripts); removed at the end.", valueName: "FILE"))
    var pidFile: String?

    @Option(help: "Most receivers served at once per listening address, and RTSP sessions (default: sized by memory, a quarter of MemAvailable / 2 MiB, between 16 and 4096).")
    var maxReceivers: Int?

    @Argument(help: "Where the stream goes, any number of: a file path (.mp4, .mkv, .ts: a container; else raw H.264, or H.265 with --codec hevc or a .h265/.hevc/.265 name), - for stdout, tcp://HOST:PORT (push to a receiver), tcp://[HOST]:PORT?listen (serve receivers), rtmp://HOST/APP/STREAM, rtsp://HOST[:PORT]/PATH or srt://HOST:PORT (publish to a media server).")
    var outputs: [String] = []

    func validate() throws {
        let sources = [device != nil, testPattern, testScene, input != nil].filter { $0 }.count
        if sources > 1 { throw ValidationError("give only one of --device, --test-pattern, --test-scene and --input") }
        if input != nil && size == nil && inputFormat != .mjpeg {
            throw ValidationError("--input needs --size WxH (and --input-format if not yuyv)")
        }
        if let maxReceivers, !(1...100_000).contains(maxReceivers) {
            throw ValidationError("--max-receivers must be between 1 and 100000, got \(maxReceivers)")
        }
        if let size, size.width % 2 != 0 || size.height % 2 != 0 {
            // 4:2:0 H.264 and H.265 crop in steps of two pixels, so an odd size can't be represented at all.
            let codecs = codecsInUse.map(\.displayName)
            throw ValidationError("--size \(size): \(codecs.isEmpty ? "H.264" : codecs.joined(separator: " and ")) (4:2:0) "
                + "\(codecs.count > 1 ? "need" : "needs") an even width and height; "
                + "use \(size.width & ~1)x\(size.height & ~1) or \((size.width + 1) & ~1)x\((size.height + 1) & ~1)")
        }
        // At least 0.001: the encoders' timestamps use a rate in thousandths, and 1e-9 made it 0/1000 (a trap).
        if let fps, !(fps >= 0.001 && fps <= 240) {
            throw ValidationError("--fps must be at least 0.001 (a frame every 1000 s) and at most 240; got \(fps)")
        }
        try OptionRange.check(frames, "--frames", in: 1...Int.max)
        try OptionRange.checkSeconds(duration, "--duration")
        try OptionRange.check(keyframeInterval, "--keyframe-interval", in: 1...OptionRange.maximumKeyframeInterval)
        try OptionRange.check(qp, "--qp", in: 0...51)
        try OptionRange.check(slices, "--slices", in: 1...32)
        try OptionRange.check(threads, "--threads", in: 0...64)
        try OptionRange.checkSeconds(wait, "--wait", inclusive: true)
        try onCameraLost.validate()
        try OptionRange.checkSeconds(stallTimeout, "--stall-timeout", minimum: 0.5, inclusive: true, maximum: 3600)
        if stallTimeout != nil && (testPattern || testScene || input != nil) {
            throw ValidationError("--stall-timeout is for a camera (--device); the test pattern, the test scene and --input cannot stall")
        }
        if onCameraLost.waits && (testPattern || testScene || input != nil) {
            throw ValidationError("--on-camera-lost \(onCameraLost.text) is for a camera (--device); the test pattern, the test scene and --input cannot go away")
        }
        if onCameraChange != nil && !onCameraLost.waits {
            throw ValidationError("--on-camera-change goes with --on-camera-lost wait (with exit, camrec ends at the loss)")
        }
        if !x264Presets.contains(preset) {
            throw ValidationError("--preset \(preset): use one of \(x264Presets.joined(separator: ", "))")
        }
        if outputs.isEmpty && listen.isEmpty && http == nil && rtsp == nil && events.eventOutput == nil { throw ValidationError("give an output: a file name, - for stdout, tcp://HOST:PORT, a media server (rtsp://, rtmp://, srt://), or --event-output PATTERN") }
        _ = try networkEndpoints()
        if let http {
            let endpoint: TCPEndpoint
            do { endpoint = try TCPEndpoint(listenSpec: http) } catch { throw ValidationError("--http \(error.description)") }
            let host = endpoint.host ?? "127.0.0.1"
            if !HTTPAccess.isLoopback(host: host) && httpAuthFile == nil && !httpInsecure {
                throw ValidationError("--http \(http) can be reached from other machines: give --http-auth-file FILE (a line user:password), or --http-insecure to serve it to anyone")
            }
        }
        if let rtsp {
            let endpoint: TCPEndpoint
            do { endpoint = try TCPEndpoint(listenSpec: rtsp) } catch { throw ValidationError("--rtsp \(error.description)") }
            let host = endpoint.host ?? "127.0.0.1"
            if !HTTPAccess.isLoopback(host: host) && httpAuthFile == nil && !httpInsecure {
                throw ValidationError("--rtsp \(rtsp) can be reached from other machines: give --http-auth-file FILE (a line user:password), or --http-insecure to serve it to anyone")
            }
        }
        if let stun {
            guard http != nil else { throw ValidationError("--stun goes with --http [HOST:]PORT") }
            guard stun.hasPrefix("stun://"), stun.count > 7 else { throw ValidationError("--stun \(stun): give stun://HOST:PORT") }
        }
        if let turn {
            guard http != nil else { throw ValidationError("--turn goes with --http [HOST:]PORT") }
            guard (turn.hasPrefix("turn://") || turn.hasPrefix("turns://")) && turn.contains("@") else {
                throw ValidationError("--turn: give turn://USER:PASSWORD@HOST:PORT (or turns://)")
            }
        }
        if let rtspMtu {
            guard rtsp != nil else { throw ValidationError("--rtsp-mtu goes with --rtsp [HOST:]PORT") }
            try OptionRange.check(rtspMtu, "--rtsp-mtu", in: 256...65_000)
        }
        if let rtspMulticast {
            guard rtsp != nil else { throw ValidationError("--rtsp-multicast goes with --rtsp [HOST:]PORT") }
            _ = try Self.multicastGroup(rtspMulticast)
        }
        if http == nil && rtsp == nil && (httpAuthFile != nil || httpInsecure) {
            throw ValidationError("--http-auth-file and --http-insecure go with --http [HOST:]PORT or --rtsp [HOST:]PORT")
        }
        if outputs.filter({ $0 == "-" }).count > 1 { throw ValidationError("stdout (-) can be given only once") }
        // The same names twice: clips would collide with the recording, and clip retention would delete it.
        if let clips = events.eventOutput, outputs.contains(clips) {
            throw ValidationError("--event-output \(clips) is also an output: give clips a name pattern of their own, e.g. 'events/%F/%H%M%S-{n}.mp4'")
        }
        try checkCodecs()
        try checkCameraEncoding()
        try checkSound()
    }

    func run() async throws {
        SignalService.blockInAllThreads()
        var logger = Logger(label: "camrec")
        logger.logLevel = logLevel
        LibavLogging.set(verbose: logLevel <= .debug)
        X264Encoder.verbose = logLevel <= .debug

        var written: PidFile?
        if let pidFile {
            do { written = try PidFile.write(pidFile) } catch {
                printError("\(error)")
                throw ReportedFailure(status: .outputError)
            }
        }
        defer { written?.remove() }
        let plan: RecordingPlan
        do {
            plan = try RecordingPlan(self, logger: logger)
        } catch let failure as RecordingFailure {
            throw report(failure)
        }
        for notice in plan.notices { printLine(notice) }
        try await record(plan, logger: logger)
    }

    /// Says `failure` on stderr and gives the exit status it ends camrec with.
    func report(_ failure: RecordingFailure) -> ReportedFailure {
        printError(failure.description)
        return ReportedFailure(status: failure.exitStatus)
    }

    /// The tcp://, rtsp://, rtmp:// and srt:// outputs and --listen values, parsed (a usage error
    /// names the bad one); any other NAME://… is refused rather than taken for a file name.
    private func networkEndpoints() throws -> [TCPEndpoint] {
        do {
            for target in outputs where MediaServerURL.looksLikeURL(target) { _ = try MediaServerURL(target) }
            if let other = outputs.first(where: { MediaServerURL.schemeSeparator($0) != nil && !TCPEndpoint.looksLikeURL($0) && !MediaServerURL.looksLikeURL($0) }) {
                throw TCPEndpointError("\(MediaServerURL.redact(other)): camrec sends to tcp://, rtsp://, rtmp:// and srt:// (to write a file by that name, give it as ./NAME)")
            }
            return try outputs.filter(TCPEndpoint.looksLikeURL).map { try TCPEndpoint(url: $0) }
                + listen.map { try TCPEndpoint(listenSpec: $0) }
        } catch let error as TCPEndpointError {
            throw ValidationError(error.description)
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
