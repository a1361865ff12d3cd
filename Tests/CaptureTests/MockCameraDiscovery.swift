@testable import Capture
import Frames
import CV4L2
import Glibc

/// What every pretend camera answers alike: its capabilities, one format at one size and
/// 30 fps, priority and stream parameters. nil for any other request, which the camera
/// answers itself (formats, buffers, streaming).
func answerDiscovery(_ request: UInt, _ arg: UnsafeMutableRawPointer, format: V4L2PixelFormat,
                     compressed: Bool = false, width: Int, height: Int) -> Int32? {
    switch request {
    case UInt(CAMREC_VIDIOC_QUERYCAP):
        let caps = UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING)
        arg.withMemoryRebound(to: v4l2_capability.self, capacity: 1) {
            $0.pointee.capabilities = caps | UInt32(V4L2_CAP_DEVICE_CAPS)
            $0.pointee.device_caps = caps
        }
    case UInt(CAMREC_VIDIOC_S_PRIORITY), UInt(CAMREC_VIDIOC_S_PARM), UInt(CAMREC_VIDIOC_STREAMOFF):
        break
    case UInt(CAMREC_VIDIOC_ENUM_FMT):
        let p = arg.assumingMemoryBound(to: v4l2_fmtdesc.self)
        guard p.pointee.index == 0 else { return -EINVAL }
        p.pointee.pixelformat = format.rawValue
        if compressed { p.pointee.flags = UInt32(V4L2_FMT_FLAG_COMPRESSED) }
    case UInt(CAMREC_VIDIOC_ENUM_FRAMESIZES):
        let p = arg.assumingMemoryBound(to: v4l2_frmsizeenum.self)
        guard p.pointee.index == 0 else { return -EINVAL }
        p.pointee.type = V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
        p.pointee.discrete = v4l2_frmsize_discrete(width: UInt32(width), height: UInt32(height))
    case UInt(CAMREC_VIDIOC_ENUM_FRAMEINTERVALS):
        let p = arg.assumingMemoryBound(to: v4l2_frmivalenum.self)
        guard p.pointee.index == 0 else { return -EINVAL }
        p.pointee.type = V4L2_FRMIVAL_TYPE_DISCRETE.rawValue
        p.pointee.discrete = v4l2_fract(numerator: 1, denominator: 30)
    case UInt(CAMREC_VIDIOC_G_PARM):
        let p = arg.assumingMemoryBound(to: v4l2_streamparm.self)
        p.pointee.parm.capture.capability = UInt32(V4L2_CAP_TIMEPERFRAME)
        p.pointee.parm.capture.timeperframe = v4l2_fract(numerator: 1, denominator: 30)
    default:
        return nil
    }
    return 0
}
