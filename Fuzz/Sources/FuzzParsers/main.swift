import FuzzChecks

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzParsers(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    checkParsers(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
