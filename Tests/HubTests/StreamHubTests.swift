import Threading
import Synchronization
import XCTest

@testable import Hub

/// The hub's ring, subscriptions and policies, with real chunks from a real pool: every access unit
/// is numbered, and each test checks the numbers a subscriber gets against what was published.
final class StreamHubTests: XCTestCase, @unchecked Sendable {
    private let pool = StreamChunkPool()

    /// Access unit `sequence`, an IDR every `idrEvery`, `bytes` long, presented at `fps`.
    private func chunk(_ sequence: Int, idrEvery: Int = 10, bytes: Int = 10, fps: UInt64 = 10) -> StreamChunk {
        let c = pool.take()
        c.fill { $0 = [UInt8](repeating: UInt8(truncatingIfNeeded: sequence), count: bytes) }
        c.sequence = UInt64(sequence)
        c.isIDR = sequence % idrEvery == 0
        c.presentationTimeNanoseconds = UInt64(sequence) * 1_000_000_000 / fps
        c.retain()
        return c
    }

    private func hub(ring: RingBounds = RingBounds(seconds: 0, maximumBytes: 0, maximumFrames: 0)) -> StreamHub {
        StreamHub(label: "test", ring: ring, keyframes: KeyframeGate())
    }

    func testANextIDRSubscriberStartsAtTheFirstIDRAfterItJoinedAndCountsWhatCameBefore() throws {
        let hub = hub()
        for i in 0..<3 { hub.publish(chunk(i)) }
        let sub = try XCTUnwrap(hub.subscribe("s", from: .nextIDR, policy: .lossless(depth: 100)))
        for i in 3..<25 { hub.publish(chunk(i)) }
        XCTAssertEqual(drained(sub), Array(10..<25))
        XCTAssertEqual(sub.snapshot.beforeStart, 7, "3...9 came before its first IDR")
        XCTAssertEqual(sub.snapshot.offered, 22)
    }

    func testTheRingHoldsTheNewestPictureGroupAndLetsGoOfOlderOnes() {
        let hub = hub(ring: RingBounds(seconds: 0, maximumBytes: 1 << 20, maximumFrames: 100))
        for i in 5..<8 { hub.publish(chunk(i)) }
        XCTAssertNil(hub.newestPictureGroup(), "nothing usable before the first IDR")
        for i in 8..<23 { hub.publish(chunk(i, idrEvery: 5)) }
        let newest = hub.newestPictureGroup()
        XCTAssertEqual(newest?.sequence, 22)
        XCTAssertEqual(newest?.accessUnits.map { Int($0[0]) }, [20, 21, 22])
        XCTAssertEqual(hub.held.frames, 3)
        hub.close()
        XCTAssertNil(hub.newestPictureGroup())
        assertEveryChunkIsBackInThePool(pool)
    }

    func testAPictureGroupOverTheRingsBoundsIsLetGoUntilTheNextIDR() {
        let hub = hub(ring: RingBounds(seconds: 0, maximumBytes: 1 << 20, maximumFrames: 4))
        for i in 0..<6 { hub.publish(chunk(i)) }
        XCTAssertNil(hub.newestPictureGroup(), "six frames in a group of at most four")
        hub.publish(chunk(10))
        XCTAssertEqual(hub.newestPictureGroup()?.sequence, 10)

        let small = self.hub(ring: RingBounds(seconds: 0, maximumBytes: 25, maximumFrames: 100))
        for i in 0..<3 { small.publish(chunk(i)) }
        XCTAssertNil(small.newestPictureGroup(), "30 bytes in a ring of 25")
        XCTAssertEqual(small.held.bytes, 0)
    }

    func testAPrerollSubscriberStartsAtTheNewestIDRAtOrBeforeThePrerollAndMissesNothingAfter() throws {
        // 10 fps, an IDR every 10: IDRs at 0, 1, 2 … s. The ring keeps 3 s.
        let hub = hub(ring: RingBounds(seconds: 3, maximumBytes: 1 << 20, maximumFrames: 1000))
        for i in 0..<57 { hub.publish(chunk(i)) }
        // The newest is 5.6 s: 2 s back is 3.6 s, and the IDR at or before it is frame 30.
        let sub = try XCTUnwrap(hub.subscribe("clip", from: .preroll(seconds: 2), policy: .lossless(depth: 4)))
        // Longer than the ring reaches: the oldest IDR held, never later.
        let far = try XCTUnwrap(hub.subscribe("far", from: .preroll(seconds: 60), policy: .lossless(depth: 4)))
        for i in 57..<60 { hub.publish(chunk(i)) }
        XCTAssertEqual(drained(sub), Array(30..<60))
        XCTAssertEqual(drained(far).first, 20, "the ring keeps 3 s back from 5.6 s: from the IDR at 2 s")
        XCTAssertEqual(sub.snapshot.beforeStart, 0)
    }

    func testAnAtOrBeforeSubscriberStartsAtTheNewestIDRPresentedAtOrBeforeThatTime() throws {
        // 10 fps, an IDR every 10 (chunk i is presented at i/10 s).
        let hub = hub(ring: RingBounds(seconds: 3, maximumBytes: 1 << 20, maximumFrames: 1000))
        XCTAssertNil(hub.newest)
        for i in 0..<57 { hub.publish(chunk(i)) }
        XCTAssertEqual(hub.newest?.sequence, 56)
        XCTAssertEqual(hub.newest?.presentationTimeNanoseconds, 5_600_000_000)
        // Exactly on an IDR (4.0 s) starts there; just before it (3.9 s), at the one before (3.0 s).
        let on = try XCTUnwrap(hub.subscribe("on", from: .atOrBefore(presentationNanoseconds: 4_000_000_000), policy: .lossless(depth: 8)))
        let before = try XCTUnwrap(hub.subscribe("before", from: .atOrBefore(presentationNanoseconds: 3_900_000_000), policy: .lossless(depth: 8)))
        // Before what the ring holds (it keeps from 2 s): the oldest IDR held, never a later one.
        let early = try XCTUnwrap(hub.subscribe("early", from: .atOrBefore(presentationNanoseconds: 0), policy: .lossless(depth: 8)))
        hub.publish(chunk(57))
        hub.close()
        XCTAssertEqual(drained(on), Array(40...57))
        XCTAssertEqual(drained(before), Array(30...57))
        XCTAssertEqual(drained(early).first, 20)
    }

    func testANewestIDRSubscriberGetsThePictureGroupHeldAtOnce() throws {
        let hub = hub(ring: .newestPictureGroup)
        for i in 0..<14 { hub.publish(chunk(i)) }
        let sub = try XCTUnwrap(hub.subscribe("snap", from: .newestIDR, policy: .skipToIDR(depth: 1)))
        XCTAssertEqual(drained(sub), [10, 11, 12, 13])
    }

    func testASlowSkipToIDRSubscriberDropsWhatWaitsAndResumesAtTheNextIDR() throws {
        let hub = hub()
        let catchUps = LockedLog()
        let sub = try XCTUnwrap(hub.subscribe("slow", from: .nextIDR, policy: .skipToIDR(depth: 4),
                                              onCatchUp: { dropped, resumed, n in catchUps.add("\(dropped) \(resumed) \(n)") }))
        for i in 0..<6 { hub.publish(chunk(i)) }   // 0...3 queued; 4 overflows: 0...4 dropped, 5 waits for an IDR
        for i in 6..<12 { hub.publish(chunk(i)) }  // 6...9 skipped, 10 and 11 queued
        XCTAssertEqual(drained(sub), [10, 11])
        XCTAssertEqual(sub.snapshot.skipped, 10, "0...9")
        XCTAssertEqual(sub.snapshot.catchUps, 1)
        XCTAssertEqual(catchUps.lines, ["5 false 1"])
        // An overflow on an IDR resumes there at once.
        for i in 12..<16 { hub.publish(chunk(i)) }  // 12...15 with room for 4
        hub.publish(chunk(20))
        XCTAssertEqual(drained(sub), [20])
        XCTAssertEqual(catchUps.lines, ["5 false 1", "4 true 2"])
    }

    func testALosslessSubscriberHoldsThePublisherUntilItTakesAndLosesNothing() throws {
        let hub = hub()
        let sub = try XCTUnwrap(hub.subscribe("file", from: .nextIDR, policy: .lossless(depth: 2)))
        let published = LockedLog()
        let publisher = Thread {
            for i in 0..<200 { hub.publish(self.chunk(i)); published.add("\(i)") }
            hub.close()
        }
        publisher.start()
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertLessThanOrEqual(published.lines.count, 3, "two queued and one waiting, however long the subscriber takes")
        var got: [Int] = []
        while let c = sub.next() {
            got.append(Int(c.sequence))
            c.release()
        }
        XCTAssertEqual(got, Array(0..<200))
    }

    func testCancellingLeavesTheHubAndFreesAWaitingPublisher() throws {
        let hub = hub()
        let sub = try XCTUnwrap(hub.subscribe("file", from: .nextIDR, policy: .lossless(depth: 1)))
        let done = expectation(description: "publisher freed")
        Thread {
            for i in 0..<5 { hub.publish(self.chunk(i)) }
            done.fulfill()
        }.start()
        Thread.sleep(forTimeInterval: 0.1)
        sub.cancel()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(hub.subscriberCount, 0)
        XCTAssertNil(sub.next(), "a cancelled subscription has ended")
    }

    func testNothingIsSubscribedAfterTheHubClosesAndTheQueuedRestIsStillTaken() throws {
        let hub = hub()
        let sub = try XCTUnwrap(hub.subscribe("late", from: .nextIDR, policy: .lossless(depth: 10)))
        for i in 0..<3 { hub.publish(chunk(i)) }
        hub.close()
        XCTAssertNil(hub.subscribe("after", from: .nextIDR, policy: .lossless(depth: 1)))
        XCTAssertEqual(drained(sub), [0, 1, 2])
        XCTAssertNil(sub.next())
    }

    func testADoorbellIsRungForEachQueuedAccessUnitAndAtTheEndAndPollNeverWaits() throws {
        final class Doorbell: SubscriptionDoorbell, @unchecked Sendable {
            let rings = LockedLog()
            func ring() { rings.add("ring") }
        }
        let hub = hub()
        let bell = Doorbell()
        let sub = try XCTUnwrap(hub.subscribe("polled", from: .nextIDR, policy: .skipToIDR(depth: 10), doorbell: bell))
        guard case .timedOut = sub.poll() else { return XCTFail("nothing queued yet: poll says so at once") }
        for i in 5..<12 { hub.publish(chunk(i)) }   // 5...9 come before its first IDR: no ring for them
        XCTAssertEqual(bell.rings.lines.count, 2, "10 and 11 queued")
        guard case .chunk(let first) = sub.poll() else { return XCTFail("10 is queued") }
        XCTAssertEqual(first.sequence, 10)
        first.release()
        hub.close()
        XCTAssertEqual(bell.rings.lines.count, 3, "and the end")
        guard case .chunk(let second) = sub.poll() else { return XCTFail("11 is still queued") }
        XCTAssertEqual(second.sequence, 11)
        second.release()
        guard case .ended = sub.poll() else { return XCTFail("then the end") }
    }

    func testAnAsyncSubscriberGetsEachAccessUnitAndNilWhenItsTaskIsCancelled() async throws {
        let hub = hub()
        let sub = try XCTUnwrap(hub.subscribe("viewer", from: .nextIDR, policy: .skipToIDR(depth: 10)))
        let task = Task { () -> [Int] in
            var got: [Int] = []
            while let c = await sub.nextAsync() {
                got.append(Int(c.sequence))
                c.release()
            }
            return got
        }
        for i in 0..<3 { hub.publish(chunk(i)) }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        let got = await task.value
        XCTAssertEqual(got, [0, 1, 2])
    }

    func testTheGateGrantsOneRequestPerInterval() {
        let gate = KeyframeGate(minimumIntervalSeconds: 60)
        let asked = LockedLog()
        XCTAssertFalse(gate.request(), "nothing connected yet")
        gate.connect { asked.add("idr") }
        XCTAssertTrue(gate.request())
        XCTAssertFalse(gate.request())
        XCTAssertEqual(asked.lines, ["idr"])
        XCTAssertEqual(gate.counts.granted, 1)
        XCTAssertEqual(gate.counts.refused, 2)
        XCTAssertTrue(KeyframeGate(minimumIntervalSeconds: .nan).request() == false)
    }

    func testAFirstIDRRequestAsksNothingWhenAnIDRIsOnItsWay() {
        let gate = KeyframeGate(minimumIntervalSeconds: 0)
        let asked = LockedLog()
        gate.connect { asked.add("idr") }
        XCTAssertEqual(gate.requestFirstIDR(joinedAfter: nil), .onItsWay, "nothing published: the first unit is an IDR")
        gate.noteForced(sequence: 0)
        gate.noteForced(sequence: 30)
        gate.noteForced(sequence: 12)
        XCTAssertEqual(gate.requestFirstIDR(joinedAfter: 29), .onItsWay, "frame 30 is an IDR not yet published")
        XCTAssertEqual(asked.lines, [])
        XCTAssertEqual(gate.requestFirstIDR(joinedAfter: 30), .requested, "frame 30 was published before the join")
        XCTAssertEqual(asked.lines, ["idr"])
        XCTAssertEqual(KeyframeGate(minimumIntervalSeconds: 60).requestFirstIDR(joinedAfter: 3), .atTheNextOne, "nothing connected")
        XCTAssertEqual(gate.counts.alreadyComing, 2)
        XCTAssertEqual(gate.counts.granted, 1)
    }

    /// The invariant StreamChunk is `@unchecked Sendable` on: written only by its producer before it is
    /// shared, read-only while held, back in its pool once, by whichever holder lets go last.
    func testAChunkReleasedByHoldersOnManyThreadsGoesBackToItsPoolOnce() {
        let pool = StreamChunkPool()
        let holders = 4, rounds = 500
        let queues = (0..<holders).map { _ in BlockingQueue<StreamChunk>(capacity: 4) }
        let wrong = Atomic<Int>(0)
        let threads = queues.enumerated().map { n, queue in
            WorkerThread(name: "holder\(n)") {
                while let chunk = queue.pop() {
                    if chunk.bytes != [UInt8](repeating: UInt8(truncatingIfNeeded: chunk.sequence), count: 64) {
                        wrong.add(1, ordering: .relaxed)
                    }
                    chunk.release()
                }
            }
        }
        threads.forEach { $0.start() }
        for round in 0..<rounds {
            let chunk = pool.take()
            chunk.fill { $0 = [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 64) }
            chunk.sequence = UInt64(round)
            chunk.retain(holders)
            for queue in queues { queue.push(chunk) }
        }
        queues.forEach { $0.close() }
        threads.forEach { $0.join() }
        XCTAssertEqual(wrong.load(ordering: .relaxed), 0, "a holder read bytes that were not its chunk's")
        // Every chunk came back (each once: a chunk recycled twice would be handed out twice at once).
        let allocated = pool.allocatedCount
        let retaken = (0..<allocated).map { _ in pool.take() }
        XCTAssertEqual(Set(retaken.map(ObjectIdentifier.init)).count, allocated)
        XCTAssertEqual(pool.allocatedCount, allocated, "a chunk never came back to its pool")
    }
}

final class LockedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func add(_ line: String) { lock.lock(); stored.append(line); lock.unlock() }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return stored }
}
