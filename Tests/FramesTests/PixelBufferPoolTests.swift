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
        let (handed, wrong) = handOverBetweenThreads(pool, frames: 300)
        XCTAssertEqual(handed, 300, "the pool never closed")
        XCTAssertEqual(wrong, 0, "a row read was not the frame's own")
        XCTAssertEqual(pool.freeCount, 3)
    }

    /// The invariant `PlaneMemory` (and a backing's slots) are `@unchecked Sendable` on: lent memory is
    /// used only by the buffer's holder until it is recycled. The loan is made on the capture thread at
    /// each take and ended on the encoder thread at each recycle, and every byte read is that frame's own.
    func testLentMemoryTakenOnOneThreadAndRecycledOnAnotherHasOneHolderAtATime() {
        let backing = SlotBacking(width: 64, height: 32, capacity: 3)
        let pool = PixelBufferPool(format: .nv12, width: 64, height: 32, capacity: 3, backing: backing)
        let (handed, wrong) = handOverBetweenThreads(pool, frames: 300)
        XCTAssertEqual(handed, 300, "the pool never closed")
        XCTAssertEqual(wrong, 0, "a row read was not the frame's own")
        XCTAssertEqual(backing.attaches.load(ordering: .relaxed), 300, "a loan at every take")
        XCTAssertEqual(backing.detaches.load(ordering: .relaxed), 300, "every loan ended at its recycle")
        XCTAssertEqual(pool.freeCount, 3)
    }

    /// A capture thread (this one) takes and fills `frames` buffers, each row with its frame's number; an
    /// encoder thread reads and recycles them. Returns how many it handed over, and how many rows the
    /// encoder read that were not their frame's.
    private func handOverBetweenThreads(_ pool: PixelBufferPool, frames: Int) -> (handed: Int, wrong: Int) {
        let handed = BlockingQueue<PixelBuffer>(capacity: 2)
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
        var handedOver = 0
        for sequence in 0..<frames {
            guard let buffer = pool.take() else { break }
            handedOver += 1
            buffer.sequence = UInt64(sequence)
            for plane in buffer.planes {
                for row in 0..<plane.height { memset(plane.base + row * plane.stride, Int32(sequence & 0xFF), plane.width) }
            }
            handed.push(buffer)
        }
        handed.close()
        encoder.join()
        return (handedOver, wrong.load(ordering: .relaxed))
    }
}

/// Lends slot `i` to buffer `i`, keeping per slot only what the holder of buffer `i` touches (as the
/// VA-API backing does), and counts loans in atomics: safe to take on one thread and recycle on another.
private final class SlotBacking: PixelBufferBacking, @unchecked Sendable {
    let memory: [UnsafeMutablePointer<UInt8>]
    let planeBytes: Int, stride: Int
    /// Slot `i`'s loan, touched only by the holder of buffer `i`: one allocation written through
    /// element by element, as the VA-API backing's `let` arrays are (a Swift `var` array written from
    /// two threads, even at two indexes, is one variable modified by both: TSan reported it, 2026-11-28).
    private let lent: UnsafeMutableBufferPointer<Bool>
    let attaches = Atomic<Int>(0), detaches = Atomic<Int>(0)

    init(width: Int, height: Int, capacity: Int) {
        stride = width + 13
        planeBytes = stride * height
        // NV12: the luma plane, then the interleaved chroma plane of half the rows.
        memory = (0..<capacity).map { _ in .allocate(capacity: (width + 13) * (height + height / 2)) }
        lent = .allocate(capacity: capacity)
        lent.initialize(repeating: false)
    }

    deinit {
        memory.forEach { $0.deallocate() }
        lent.deallocate()
    }

    func attach(bufferIndex: Int, planes: inout [PlaneMemory]) throws {
        attaches.add(1, ordering: .relaxed)
        lent[bufferIndex] = true
        planes.append(PlaneMemory(base: memory[bufferIndex], stride: stride))
        planes.append(PlaneMemory(base: memory[bufferIndex] + planeBytes, stride: stride))
    }

    func detach(bufferIndex: Int) {
        if lent[bufferIndex] { detaches.add(1, ordering: .relaxed) }
        lent[bufferIndex] = false
    }
}
