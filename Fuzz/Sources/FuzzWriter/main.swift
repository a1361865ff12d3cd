import FuzzChecks

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWriter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    checkWriter(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
