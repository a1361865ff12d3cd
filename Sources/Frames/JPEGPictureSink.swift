/// Where a source's own JPEGs go as they arrive (an MJPEG camera's frames for `/stream.mjpg`), before
/// they are decoded: the bytes are copied, never kept. Called on the capture thread; must not wait.
public protocol JPEGPictureSink: AnyObject, Sendable {
    func publish(jpeg: UnsafeRawBufferPointer, sequence: UInt64, presentationTimeNanoseconds: UInt64)
}
