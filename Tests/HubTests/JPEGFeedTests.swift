import Hub
import Threading
import Synchronization
import XCTest

/// The invariant `JPEGFeed.Picture` (a pooled buffer, `@unchecked Sendable`) rests on: the producer fills
/// only a slot no reader holds, so a reader sees each picture whole while it holds it. Run from several
/// threads at once (scripts/tsan.sh runs this class under ThreadSanitizer, which sees any access outside it).
final class JPEGFeedTests: XCTestCase {
    func testReadersOnManyTasksSeeEveryPictureTheyTakeWholeAndInOrderWhileTheProducerRefillsSlots() async {
        let feed = JPEGFeed(maximumReaders: 4, everyFrame: true)
        let pictures = 3_000
        // Readers that have taken a picture: the producer ends the feed only once all have (up to 10 s).
        // Optimised, it publishes all 3000 in about 70 ms, and a reader task first run after the feed
        // ended took none (every reader, on a loaded machine, 2026-11-28).
        let readersServed = Counter()
        // Each picture is its sequence number's byte over and over, its size changing so slots regrow.
        let producer = WorkerThread(name: "jpeg-producer") {
            var bytes = [UInt8](repeating: 0, count: 9_000)
            for sequence in 1...UInt64(pictures) {
                let size = 1_000 + Int(sequence * 7919 % 8_000)
                for i in 0..<size { bytes[i] = UInt8(sequence % 251) }
                bytes.withUnsafeBytes { all in
                    feed.publish(jpeg: UnsafeRawBufferPointer(rebasing: all[0..<size]), sequence: sequence,
                                 presentationTimeNanoseconds: sequence * 1_000_000)
                }
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while readersServed.value.load(ordering: .acquiring) < 4 && ContinuousClock.now < deadline { usleep(1_000) }
            feed.close()
        }
        let readers = (0..<4).compactMap { _ in feed.join(framesPerSecond: nil) }
        XCTAssertEqual(readers.count, 4)
        producer.start()
        let results = await withTaskGroup(of: (taken: Int, torn: Int, outOfOrder: Int).self) { group in
            for reader in readers {
                group.addTask {
                    var taken = 0, torn = 0, outOfOrder = 0
                    var last: UInt64 = 0
                    while let picture = await reader.next() {
                        if taken == 0 { readersServed.value.add(1, ordering: .releasing) }
                        taken += 1
                        let expected = UInt8(picture.sequence % 251)
                        if picture.jpeg.contains(where: { $0 != expected }) { torn += 1 }
                        if picture.sequence <= last { outOfOrder += 1 }
                        last = picture.sequence
                    }
                    feed.leave(reader)
                    return (taken, torn, outOfOrder)
                }
            }
            var all: [(taken: Int, torn: Int, outOfOrder: Int)] = []
            for await result in group { all.append(result) }
            return all
        }
        producer.join()
        XCTAssertEqual(results.count, 4)
        for result in results {
            XCTAssertGreaterThan(result.taken, 0, "each reader took pictures")
            XCTAssertEqual(result.torn, 0, "no picture changed while a reader held it")
            XCTAssertEqual(result.outOfOrder, 0, "each reader's pictures come newest-later")
        }
        XCTAssertEqual(feed.readerCount, 0, "every reader left")
        XCTAssertEqual(feed.publishedCount, pictures, "the producer always found a free slot")
    }
}

/// An atomic count that closures on other threads and tasks share.
private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}
