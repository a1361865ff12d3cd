// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "camrec",
    products: [
        .executable(name: "camrec", targets: ["camrec"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        // No traits: camrec reads no swift-configuration settings (ConfigurationSupport) and decodes no
        // dates from forms (FullFoundation). With Hummingbird's default traits on, SwiftPM 6.3 compiled
        // Hummingbird without them for `--product camrec` and with them for `--build-tests`: twice a run.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/swift-extras/swift-extras-base64", from: "1.0.0"),
    ],
    targets: [
        // C shims: only what Swift cannot import by itself.
        // Opening a library on first use, and the line that names its Debian package when it cannot be.
        .target(name: "CLazyLoad"),
        // libv4lconvert (Debian's libv4l-dev to build), opened on first use like libav*: only a camera format
        // camrec cannot convert itself needs it.
        .target(name: "CV4L2", dependencies: ["CLazyLoad"]),
        // libavcodec, libavformat and libavutil, opened on first use (LazyLibav.c): a recording that
        // needs none of them loads none of their ~130 libraries; libva too (VA-API's calls of camrec's own).
        .target(name: "CFFmpeg", dependencies: ["CLazyLoad"]),
        // libx264 itself: H.264 in software without loading libavcodec (Debian's libx264-dev).
        .target(name: "CX264", linkerSettings: [.linkedLibrary("x264")]),
        .target(name: "CX265", dependencies: ["CLazyLoad"]),
        // libasound (Debian's libasound2-dev to build), opened on first use like libav*: microphones.
        .target(name: "CALSA", dependencies: ["CLazyLoad"]),
        // libjpeg-turbo (Debian's libjpeg62-turbo-dev to build), opened on first use: MJPEG cameras'
        // JPEGs decoded as their planes stand, a strip at a time.
        .target(name: "CJPEG", dependencies: ["CLazyLoad"]),
        // GStreamer's webrtcbin (Debian's gstreamer1.0-plugins-bad and gstreamer1.0-nice), opened on first
        // use: WebRTC viewers (`POST /whep`); built without any GStreamer header.
        .target(name: "CGStreamer", dependencies: ["CLazyLoad"]),
        // What every user of libavcodec here shares: error text, a decoder opened once.
        .target(name: "Libav", dependencies: ["CFFmpeg", "SystemSupport"]),

        // What camrec needs of the C library that Foundation would give (camrec links no Foundation):
        // reads of sysfs, procfs and directories, text out of C buffers, decimals, `host:port`, trimming.
        .target(name: "SystemSupport"),
        // Pure Swift, no C imports: Annex-B scanning/writing, NAL/SPS/PPS parsing.
        .target(name: "Bitstream", dependencies: ["SystemSupport"]),

        // libyuv (Debian's libyuv-dev), for the packed 4:2:2 conversions.
        .systemLibrary(name: "CYUV"),
        // Frames, as CoreVideo stands under capture and encoding: pixel buffers, formats, pools,
        // conversions, the clock that stamps them. Swift, but for libyuv's SIMD rows (YUYV/UYVY).
        .target(name: "Frames", dependencies: ["CYUV", "Threading"]),
        // CJPEG: libjpeg-turbo for MJPEG cameras; Libav for LazyLibrary's one-line reasons.
        .target(name: "Capture", dependencies: [
            "Frames", "CV4L2", "CJPEG", "Libav", "SystemSupport",
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .target(name: "Encoder", dependencies: ["CFFmpeg", "CX264", "CX265", "Libav", "Frames", "Bitstream", "SystemSupport"]),
        .target(name: "Threading", dependencies: [
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // Motion in the picture, from the pool buffers' luma before encoding (pure Swift).
        .target(name: "Motion", dependencies: ["Frames"]),
        // The seam between encoders and everything that takes their stream: a hub per encoded
        // stream with the recent access units, the one keyframe gate, and subscriptions.
        .target(name: "Hub", dependencies: ["Frames", "Threading"]),
        // The recording's sound: sources (the test tone), the AAC encoder (libavcodec), and the thread
        // that stamps packets on the video's clock and publishes them into the hubs.
        .target(name: "Audio", dependencies: ["CALSA", "CFFmpeg", "Libav", "Capture", "Frames", "Hub", "Threading", "Encoder", "SystemSupport"]),
        // The network layer both the outputs and the receiver use: TCP sockets and endpoints (every
        // socket call in one place), and what travels on the wire besides H.264: the timing SEI and
        // access-unit reassembly.
        .target(name: "NetStream", dependencies: [
            "Bitstream", "Frames", "SystemSupport", "Threading",
            .product(name: "SystemPackage", package: "swift-system"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),
        .target(name: "Outputs", dependencies: [
            "Bitstream", "Threading", "NetStream", "Hub", "Frames", "SystemSupport",
            .product(name: "SystemPackage", package: "swift-system"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),
        // Recording files in MP4, QuickTime, Matroska and MPEG-TS, written by libavformat.
        .target(name: "Containers", dependencies: ["CFFmpeg", "Libav", "Outputs", "NetStream", "Bitstream", "Hub", "Audio", "SystemSupport"]),
        // `--http`: the live page (WebRTC through /whep, else fragmented MP4 over a WebSocket), status, snapshot, metrics.
        .target(name: "HTTPServer", dependencies: [
            "Containers", "Outputs", "Bitstream", "Frames", "Libav", "Hub", "Audio", "NetStream", "Threading", "SystemSupport", "CGStreamer",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "ExtrasBase64", package: "swift-extras-base64"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        // RTSP (RFC 2326) without I/O, as swift-nio splits its protocols: the request and interleaved-frame
        // parser, responses, SDP, RTP packetization (FU-A, FU), RTCP, Digest and Basic authentication.
        .target(name: "RTSP", dependencies: [
            "Bitstream",
            .product(name: "ExtrasBase64", package: "swift-extras-base64"),
        ]),
        // `--rtsp`: the server on SwiftNIO (connections, sessions, RTP over TCP and UDP) fed by the hubs.
        .target(name: "RTSPServer", dependencies: [
            "RTSP", "Bitstream", "Frames", "Hub", "NetStream", "Outputs", "SystemSupport",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),
        .target(name: "Receiver", dependencies: [
            "CFFmpeg", "Libav", "Bitstream", "Frames", "NetStream", "Outputs", "Threading", "SystemSupport",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .target(name: "Recorder", dependencies: [
            "Frames", "Capture", "Encoder", "Outputs", "Bitstream", "Threading", "Hub",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "camrec", dependencies: [
            "Recorder", "Hub", "Bitstream", "Frames", "Capture", "Containers", "Encoder", "Libav", "NetStream", "Outputs", "Receiver", "HTTPServer", "RTSP", "RTSPServer",
            "Threading", "Motion", "Audio", "SystemSupport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
        ], linkerSettings: [
            // lld with packed relative relocations (glibc 2.36 reads them): the ~30 000 (70 000 with the
            // runtime linked in) pointers the loader fixes up at start are a few KiB of table to read
            // instead of 0.9-1.7 MiB (docs/PERFORMANCE.md, issue 51). They reach the XCTest bundle too.
            .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"]),
        ], plugins: ["BuildCommit"]),
        // `camrec --version` names the commit it was built from.
        .plugin(name: "BuildCommit", capability: .buildTool()),

        // What several test targets share: `SoftwareEncoder` (libx264 and libx265 through libavcodec, the
        // reference the direct encoders are compared with) and `visibleBytes`. camrec itself never uses it.
        .target(name: "TestSupport", dependencies: ["Encoder", "Frames", "Bitstream", "CFFmpeg", "Libav"], path: "Tests/TestSupport"),
        .testTarget(name: "SystemSupportTests", dependencies: ["SystemSupport"]),
        .testTarget(name: "FramesTests", dependencies: ["Frames", "Threading", "TestSupport"]),
        .testTarget(name: "BitstreamTests", dependencies: ["Bitstream", "SystemSupport"]),
        .testTarget(name: "CaptureTests", dependencies: ["Frames", "Capture", "Threading", "CFFmpeg", "TestSupport"]),
        .testTarget(name: "EncoderTests", dependencies: ["Encoder", "Frames", "Capture", "Bitstream", "Threading", "TestSupport"]),
        .testTarget(name: "OutputsTests", dependencies: ["Outputs", "NetStream", "Bitstream", "Hub", "Libav"]),
        .testTarget(name: "HubTests", dependencies: ["Hub", "Threading"]),
        .testTarget(name: "ThreadingTests", dependencies: ["Threading", "Frames"]),
        // What --motion costs, measured: swift run -c release motion-benchmark
        .executableTarget(name: "motion-benchmark", dependencies: ["Motion", "Capture", "Frames"], path: "benchmarks/motion-benchmark"),
        .testTarget(name: "MotionTests", dependencies: ["Motion", "Capture", "Frames"]),
        .testTarget(name: "RecorderTests", dependencies: [
            "Recorder", "Hub", "Capture", "Encoder", "Frames", "Bitstream", "Outputs", "Threading",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .testTarget(name: "ContainersTests", dependencies: ["Containers", "Outputs", "Libav", "Hub", "Audio", "Bitstream"]),
        .testTarget(name: "AudioTests", dependencies: ["Audio", "Hub", "Libav", "CFFmpeg", "Threading", "Frames"]),
        .testTarget(name: "NetStreamTests", dependencies: ["NetStream", "Bitstream"]),
        .testTarget(name: "ReceiverTests", dependencies: ["Receiver", "NetStream", "Outputs"]),
        .testTarget(name: "RTSPTests", dependencies: ["RTSP", "Bitstream"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "Outputs"]),
        .testTarget(name: "CamrecTests", dependencies: [
            "Bitstream", "Frames", "Capture", "Encoder", "Outputs", "Recorder", "Hub", "camrec",
            .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)

// The XCTests' `@testable import`s need -enable-testing on camrec's own modules, and only there:
// `CAMREC_TESTABLE=1 swift build -c release` (scripts/test.sh) gives it to them and to no dependency
// (`-Xswiftc -enable-testing` gave it to SwiftNIO and Hummingbird too, unlike a user's build; the release
// build's time was the same either way, 385 s against 390 s on 2026-11-26).
if Context.environment["CAMREC_TESTABLE"] == "1" {
    for target in package.targets where (target.type == .regular || target.type == .executable) && target.name != "CV4L2" {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-enable-testing"])]
    }
}
