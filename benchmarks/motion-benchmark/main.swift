// What `--motion` costs: the detector on 1080p frames of `--test-scene` (drawn beforehand, so only
// the detector is timed), on one thread, in that thread's CPU time. Prints milliseconds per frame and
// the share of one core at 30 fps. Run: swift run -c release motion-benchmark [WIDTHxHEIGHT] [FRAMES]
import Capture
import Frames
import Foundation
import Motion

let arguments = CommandLine.arguments.dropFirst()
let size: FrameSize = arguments.first.flatMap { text in
    let parts = text.split(separator: "x").compactMap { Int($0) }
    return parts.count == 2 && parts[0] >= 16 && parts[1] >= 16 ? FrameSize(width: parts[0], height: parts[1]) : nil
} ?? FrameSize(width: 1920, height: 1080)
let frames = arguments.dropFirst().first.flatMap { Int($0) } ?? 900
let distinct = 60

// The scene from 9 s on (the object enters at 10 s), so both still and moving frames are timed.
let source = TestPatternSource(size: size, fps: 30, realTime: false, picture: .eventScene)
let pool = PixelBufferPool(format: .nv12, width: size.width, height: size.height, capacity: distinct + 2)
try source.start(pool: pool)
var drawn: [PixelBuffer] = []
for index in 0..<(270 + distinct) {
    guard let frame = try source.nextFrame() else { fatalError("the scene ended") }
    if index >= 270 { drawn.append(frame) } else { frame.recycle() }
}

func threadCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

let detector = MotionDetector(width: size.width, height: size.height,
                              settings: .init(mask: [MotionDetector.Rectangle(x: 0, y: 0, width: size.width, height: 48)]))
var motionFrames = 0
let start = threadCPUSeconds()
for index in 0..<frames {
    if case .motion = detector.look(at: drawn[index % distinct]) { motionFrames += 1 }
}
let seconds = threadCPUSeconds() - start
let perFrame = seconds / Double(frames)
print("motion detector, \(size) NV12, \(frames) frames (\(motionFrames) with motion): "
    + "\(String(format: "%.3f", perFrame * 1000)) ms a frame of CPU, "
    + "\(String(format: "%.2f", perFrame * 30 * 100))% of one core at 30 fps")
