@testable import Capture
import Frames
import CV4L2
import XCTest

final class V4L2PixelFormatTests: XCTestCase {
    func testFourccsMatchTheKernelHeaders() {
        XCTAssertEqual(V4L2PixelFormat.yuyv.rawValue, CAMREC_V4L2_PIX_FMT_YUYV)
        XCTAssertEqual(V4L2PixelFormat.uyvy.rawValue, CAMREC_V4L2_PIX_FMT_UYVY)
        XCTAssertEqual(V4L2PixelFormat.nv12.rawValue, CAMREC_V4L2_PIX_FMT_NV12)
        XCTAssertEqual(V4L2PixelFormat.nv12m.rawValue, CAMREC_V4L2_PIX_FMT_NV12M)
        XCTAssertEqual(V4L2PixelFormat.yuv420.rawValue, CAMREC_V4L2_PIX_FMT_YUV420)
        XCTAssertEqual(V4L2PixelFormat.yvu420.rawValue, CAMREC_V4L2_PIX_FMT_YVU420)
        XCTAssertEqual(V4L2PixelFormat.yuv422p.rawValue, CAMREC_V4L2_PIX_FMT_YUV422P)
        XCTAssertEqual(V4L2PixelFormat.rgb24.rawValue, CAMREC_V4L2_PIX_FMT_RGB24)
        XCTAssertEqual(V4L2PixelFormat.bgr32.rawValue, CAMREC_V4L2_PIX_FMT_BGR32)
        XCTAssertEqual(V4L2PixelFormat.xbgr32.rawValue, CAMREC_V4L2_PIX_FMT_XBGR32)
        XCTAssertEqual(V4L2PixelFormat.grey.rawValue, CAMREC_V4L2_PIX_FMT_GREY)
        XCTAssertEqual(V4L2PixelFormat.mjpeg.rawValue, CAMREC_V4L2_PIX_FMT_MJPEG)
    }

    func testNamesPrintAsFourccs() {
        XCTAssertEqual(V4L2PixelFormat.yuyv.description, "YUYV")
        XCTAssertEqual(V4L2PixelFormat(rawValue: 0x2020_3031).description, "10", "trailing spaces trimmed")
        XCTAssertEqual(V4L2PixelFormat(rawValue: CAMREC_V4L2_PIX_FMT_RGB24).fourcc, "RGB3")
        XCTAssertEqual(V4L2PixelFormat(rawValue: 0x8000_0000 | V4L2PixelFormat.yuyv.rawValue).fourcc, "YUYV-BE")
        XCTAssertNil(V4L2PixelFormat(fourcc: "YUY"))
    }

    func testUserNamesParse() {
        XCTAssertEqual(V4L2PixelFormat(name: "yuyv"), .yuyv)
        XCTAssertEqual(V4L2PixelFormat(name: "NV12"), .nv12)
        XCTAssertEqual(V4L2PixelFormat(name: "i420"), .yuv420)
        XCTAssertEqual(V4L2PixelFormat(name: "YU12"), .yuv420)
        XCTAssertEqual(V4L2PixelFormat(name: "RGB3"), .rgb24)
        XCTAssertEqual(V4L2PixelFormat(name: "rgb24"), .rgb24)
        XCTAssertEqual(V4L2PixelFormat(name: "mjpeg"), .mjpeg)
        XCTAssertNil(V4L2PixelFormat(name: "FOOOO"))
    }

    func testLayoutsOfKnownFormats() {
        XCTAssertEqual(V4L2PixelFormat.nv12m.cameraLayout, .nv12)
        XCTAssertEqual(V4L2PixelFormat.yvu420.cameraLayout, .yv12)
        XCTAssertEqual(V4L2PixelFormat.bgr32.cameraLayout, .bgrx, "BGR4 is B, G, R, X in memory")
        XCTAssertEqual(V4L2PixelFormat.rgb32.cameraLayout, .xrgb, "RGB4 is X, R, G, B in memory")
        XCTAssertNil(V4L2PixelFormat.mjpeg.cameraLayout)
    }

    func testCapabilitiesOfAnOutputNodeSayWhatItIs() {
        let output: V4L2Capabilities = [.videoOutput, .streaming]
        XCTAssertFalse(output.canCaptureVideo)
        XCTAssertEqual(output.kind, "a video output device")
        XCTAssertTrue(V4L2Capabilities([.videoCaptureMultiplanar, .streaming]).canCaptureVideo)
        XCTAssertFalse(V4L2Capabilities([.videoCapture, .readWrite]).canCaptureVideo, "no streaming I/O")
    }

    func testIoctlErrorsNameTheRequestAndErrno() {
        let error = V4L2IoctlError(request: "VIDIOC_S_FMT", errno: .resourceBusy)
        XCTAssertEqual(error.description, "VIDIOC_S_FMT: Device or resource busy")
    }
}
