import FuzzChecks

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReassembly(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    checkReassembly(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
