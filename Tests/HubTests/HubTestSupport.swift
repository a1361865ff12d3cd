import XCTest

@testable import Hub

/// The sequence numbers a subscriber has queued now, taken in order (each chunk released).
func drained(_ subscription: Subscription) -> [Int] {
    var got: [Int] = []
    while case .chunk(let c) = subscription.next(timeoutNanoseconds: 0) {
        got.append(Int(c.sequence))
        c.release()
    }
    return got
}

/// Every chunk went back to `pool`: taking as many as it ever made makes none.
func assertEveryChunkIsBackInThePool(_ pool: StreamChunkPool, file: StaticString = #filePath, line: UInt = #line) {
    let before = pool.allocatedCount
    let again = (0..<before).map { _ in pool.take() }
    XCTAssertEqual(pool.allocatedCount, before, "chunks still held when the hub closed", file: file, line: line)
    _ = again
}
