import FuzzChecks

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRTSP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    checkRTSP(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
