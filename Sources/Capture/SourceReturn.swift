/// How waiting for a lost source ended.
public enum SourceReturnOutcome: Sendable {
    /// The same camera is back, opened with the same format and not yet started.
    case returned(FrameSource)
    /// The recording was asked to stop meanwhile.
    case cancelled
    /// It did not come back within the time allowed.
    case timedOut(seconds: Double)
}

/// What a recording does when its camera goes away and `--on-camera-lost wait` is asked for: it
/// waits here for the same camera and records on from it. `cancel()` may come from any thread and
/// ends a wait promptly.
public protocol SourceReturn: AnyObject, Sendable {
    /// Blocks until the camera `lost` was reading is back (never another camera that took its
    /// place), opened with the same size and pixel format; or until `cancel()` or the time limit.
    func waitForReturn(of lost: FrameSource) -> SourceReturnOutcome
    func cancel()
}
