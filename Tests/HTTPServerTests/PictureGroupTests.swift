import Outputs
import XCTest

@testable import HTTPServer

final class PictureGroupTests: XCTestCase {
    private func chunk(_ pool: StreamChunkPool, sequence: UInt64, idr: Bool, bytes: Int = 10) -> StreamChunk {
        let c = pool.take()
        c.bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: sequence), count: bytes)
        c.sequence = sequence
        c.isIDR = idr
        c.retain()
        return c
    }

    func testHoldsFromTheNewestIDRAndLetsGoOfTheOlderGroup() {
        let pool = StreamChunkPool()
        var group = PictureGroup(maximumFrames: 100, maximumBytes: 1 << 20)
        for s in 0..<3 {
            let c = chunk(pool, sequence: UInt64(s), idr: false)
            group.add(c)
            c.release()
        }
        XCTAssertNil(group.newest, "nothing usable before the first IDR")
        for s in 3..<13 {
            let c = chunk(pool, sequence: UInt64(s), idr: s == 3 || s == 8)
            group.add(c)
            c.release()
        }
        let newest = group.newest
        XCTAssertEqual(newest?.sequence, 12)
        XCTAssertEqual(newest?.accessUnits.map { $0[0] }, [8, 9, 10, 11, 12])
        group.clear()
        XCTAssertNil(group.newest)
        // Every chunk went back to the pool: taking as many again makes none.
        let before = pool.allocatedCount
        let again = (0..<before).map { _ in pool.take() }
        XCTAssertEqual(pool.allocatedCount, before)
        _ = again
    }

    func testAGroupOverItsBoundsIsDroppedUntilTheNextIDR() {
        let pool = StreamChunkPool()
        var group = PictureGroup(maximumFrames: 4, maximumBytes: 1 << 20)
        for s in 0..<6 {
            let c = chunk(pool, sequence: UInt64(s), idr: s == 0)
            group.add(c)
            c.release()
        }
        XCTAssertNil(group.newest, "five frames in a group of at most four")
        let idr = chunk(pool, sequence: 6, idr: true)
        group.add(idr)
        idr.release()
        XCTAssertEqual(group.newest?.sequence, 6)

        var small = PictureGroup(maximumFrames: 100, maximumBytes: 25)
        for s in 0..<3 {
            let c = chunk(pool, sequence: UInt64(s), idr: s == 0)
            small.add(c)
            c.release()
        }
        XCTAssertNil(small.newest, "30 bytes in a group of at most 25")
        group.clear()
    }
}
