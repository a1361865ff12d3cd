import CV4L2
import Frames

/// An ioctl request code with the name errors are reported under.
struct V4L2Request: Sendable, CustomStringConvertible {
    let name: String
    let code: UInt

    var description: String { name }

    static let queryCapabilities = V4L2Request(name: "VIDIOC_QUERYCAP", code: UInt(CAMREC_VIDIOC_QUERYCAP))
    static let enumerateFormats = V4L2Request(name: "VIDIOC_ENUM_FMT", code: UInt(CAMREC_VIDIOC_ENUM_FMT))
    static let enumerateFrameSizes = V4L2Request(name: "VIDIOC_ENUM_FRAMESIZES", code: UInt(CAMREC_VIDIOC_ENUM_FRAMESIZES))
    static let enumerateFrameIntervals = V4L2Request(name: "VIDIOC_ENUM_FRAMEINTERVALS",
                                                     code: UInt(CAMREC_VIDIOC_ENUM_FRAMEINTERVALS))
    static let getFormat = V4L2Request(name: "VIDIOC_G_FMT", code: UInt(CAMREC_VIDIOC_G_FMT))
    static let setFormat = V4L2Request(name: "VIDIOC_S_FMT", code: UInt(CAMREC_VIDIOC_S_FMT))
    static let tryFormat = V4L2Request(name: "VIDIOC_TRY_FMT", code: UInt(CAMREC_VIDIOC_TRY_FMT))
    static let getParameters = V4L2Request(name: "VIDIOC_G_PARM", code: UInt(CAMREC_VIDIOC_G_PARM))
    static let setParameters = V4L2Request(name: "VIDIOC_S_PARM", code: UInt(CAMREC_VIDIOC_S_PARM))
    static let setPriority = V4L2Request(name: "VIDIOC_S_PRIORITY", code: UInt(CAMREC_VIDIOC_S_PRIORITY))
    static let requestBuffers = V4L2Request(name: "VIDIOC_REQBUFS", code: UInt(CAMREC_VIDIOC_REQBUFS))
    static let queryBuffer = V4L2Request(name: "VIDIOC_QUERYBUF", code: UInt(CAMREC_VIDIOC_QUERYBUF))
    static let queueBuffer = V4L2Request(name: "VIDIOC_QBUF", code: UInt(CAMREC_VIDIOC_QBUF))
    static let dequeueBuffer = V4L2Request(name: "VIDIOC_DQBUF", code: UInt(CAMREC_VIDIOC_DQBUF))
    static let streamOn = V4L2Request(name: "VIDIOC_STREAMON", code: UInt(CAMREC_VIDIOC_STREAMON))
    static let streamOff = V4L2Request(name: "VIDIOC_STREAMOFF", code: UInt(CAMREC_VIDIOC_STREAMOFF))
    static let queryControl = V4L2Request(name: "VIDIOC_QUERYCTRL", code: UInt(CAMREC_VIDIOC_QUERYCTRL))
    static let setControl = V4L2Request(name: "VIDIOC_S_CTRL", code: UInt(CAMREC_VIDIOC_S_CTRL))
}
