// swift-tools-version:6.0
// libFuzzer targets: FuzzReassembler (AnnexBScanner + AccessUnitAssembler + the timing SEI + the
// access-unit bound), FuzzParsers (SPS, PPS, slice header, AccessUnitLimit), FuzzWriter (AnnexBStreamWriter),
// FuzzRTSP (the RTSP request and interleaved-frame parser, RTCP receiver reports as a session reads them,
// Transport, request URIs).
// A package of its own because `swift build --sanitize=fuzzer` breaks ordinary executables in the same
// package; its sources are the main package's, through the symlinks in Sources/.
//   swift build -c release --sanitize=fuzzer && .build/release/FuzzReassembler -max_total_time=60
import PackageDescription

let package = Package(
    name: "camrec-fuzz",
    targets: [
        // The text and file helpers the parsers share (no dependencies of its own).
        .target(name: "SystemSupport", path: "Sources/SystemSupport"),
        .target(name: "Bitstream", dependencies: ["SystemSupport"], path: "Sources/Bitstream"),
        // The stream parts of NetStream only: its sockets and event loops need swift-system and SwiftNIO and are no parser.
        .target(name: "NetStream", dependencies: ["Bitstream", "SystemSupport"], path: "Sources/NetStream",
                exclude: ["SocketError.swift", "TCPEndpoint.swift", "ServerSockets.swift", "ResolvedAddress.swift", "LibraryConnection.swift",
                          "EventLoops.swift"]),
        // The RTSP parts that read a client's bytes: SDP and authentication need swift-extras-base64 and read none.
        .target(name: "RTSP", dependencies: ["Bitstream"], path: "Sources/RTSP",
                exclude: ["SessionDescription.swift", "RTSPAuthentication.swift"]),
        .target(name: "FuzzChecks", dependencies: ["Bitstream", "NetStream", "RTSP"]),
        .executableTarget(name: "FuzzReassembler", dependencies: ["FuzzChecks"]),
        .executableTarget(name: "FuzzParsers", dependencies: ["FuzzChecks"]),
        .executableTarget(name: "FuzzWriter", dependencies: ["FuzzChecks"]),
        .executableTarget(name: "FuzzRTSP", dependencies: ["FuzzChecks"]),
    ],
    swiftLanguageModes: [.v6]
)
