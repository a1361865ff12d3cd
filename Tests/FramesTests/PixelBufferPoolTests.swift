import Frames
import Glibc
import Threading
import Synchronization
import XCTest

final class PixelBufferPoolTests: XCTestCase {
    func testBuffersAreAlignedAndStridesCoverTheRow() {
        let pool = PixelBufferPool(format: .nv12, width: 642, height: 362, capacity: 2)
        let buffer = try! XCTUnwrap(pool.tryTake())
        XCTAssertEqual(buffer.planes.count, 2)
        for plane in buffer.planes {
            XCTAssertEqual(Int(bitPattern: plane.base) % 64, 0)
            XCTAssertEqual(plane.stride % 64, 0)
            XCTAssertGreaterThanOrEqual(plane.stride, plane.width)
        }
        XCTAssertEqual(buffer.planes[1].width, 642)
        XCTAssertEqual(buffer.planes[1].height, 181)
    }

    func testPoolNeverGrowsAndCountsExhaustion() {
        let pool = PixelBufferPool(format: .i420, width: 64, height: 48, capacity: 3)
        let taken = (0..<3).compactMap { _ in pool.tryTake() }
        XCTAssertEqual(taken.count, 3)
        XCTAssertEqual(Set(taken.map(\.index)).count, 3)
        XCTAssertNil(pool.tryTake())
        XCTAssertEqual(pool.exhaustedCount, 1)
        taken[1].recycle()
        XCTAssertTrue(pool.tryTake() === taken[1], "a recycled buffer is reused, not a new one")
    }

    func testBuffersAreReusedAcrossManyFrames() {
        let pool = PixelBufferPool(format: .nv12, width: 32, height: 32, capacity: 4)
        var seen = Set<ObjectIdentifier>()
        for _ in 0..<1000 {
            let b = pool.tryTake()!
            seen.insert(ObjectIdentifier(b))
            b.recycle()
        }
        XCTAssertLessThanOrEqual(seen.count, 4)
        XCTAssertEqual(pool.freeCount, 4)
    }

    func testWaitingTakerWakesOnRecycleAndOnClose() {
        let pool = PixelBufferPool(format: .nv12, width: 16, height: 16, capacity: 1)
        let only = pool.tryTake()!
        let got = BlockingQueue<Bool>(capacity: 2)
        let waiter = WorkerThread(name: "taker") {
            got.push(pool.take() != nil)
            got.push(pool.take() != nil)
        }
        waiter.start()
        usleep(50_000)
        only.recycle()
        XCTAssertEqual(got.pop(timeoutNanoseconds: 5_000_000_000), true)
        pool.close()
        XCTAssertEqual(got.pop(timeoutNanoseconds: 5_000_000_000), false, "close wakes a waiting taker with nil")
        waiter.join()
    }

    /// The invariant PixelBuffer and PixelBufferPool are `@unchecked Sendable` on: a buffer has one owner
    /// at a time, handed on through the pool's lock or a queue. A capture thread fills each buffer, an
    /// encoder thread reads and recycles it, and every byte it reads is the frame's own.
    func testABufferPassedBetweenThreadsHasOneOwnerAtATime() {
        let pool = PixelBufferPool(format: .nv12, width: 64, height: 32, capacity: 3)
        let handed = BlockingQueue<PixelBuffer>(capacity: 2)
        let frames = 300
        let wrong = Atomic<Int>(0)
        let encoder = WorkerThread(name: "encoder") {
            while let buffer = handed.pop() {
                let mark = UInt8(truncatingIfNeeded: buffer.sequence)
                for plane in buffer.planes {
                    for row in 0..<plane.height where plane.base[row * plane.stride] != mark || plane.base[row * plane.stride + plane.width - 1] != mark {
                        wrong.add(1, ordering: .relaxed)
                    }
                }
                buffer.recycle()
            }
        }
        encoder.start()
        for sequence in 0..<frames {
            guard let buffer = pool.take() else { return XCTFail("the pool closed") }
            buffer.sequence = UInt64(sequence)
            for plane in buffer.planes {
                for row in 0..<plane.height { memset(plane.base + row * plane.stride, Int32(sequence & 0xFF), plane.width) }
            }
            handed.push(buffer)
        }
        handed.close()
        encoder.join()
        XCTAssertEqual(wrong.load(ordering: .relaxed), 0, "a row read was not the frame's own")
        XCTAssertEqual(pool.freeCount, 3)
    }
}
