import Frames
import Glibc
import Threading
import Synchronization
import XCTest

/// The invariants the `@unchecked Sendable` primitives of Threading rest on, exercised from several
/// threads at once (scripts/tsan.sh runs this class under ThreadSanitizer, which sees any access
/// outside them).
final class ThreadPrimitiveTests: XCTestCase {
    /// Monitor: its state is touched only with the lock held, so no change is lost, and a change wakes
    /// a thread waiting for it.
    func testAMonitorChangedFromManyThreadsLosesNoChangeAndWakesItsWaiter() {
        let counter = Monitor(0)
        let threads = 4, each = 5_000
        let reached = Atomic<Bool>(false)
        let waiter = WorkerThread(name: "waiter") {
            counter.wait(until: { $0 == threads * each }) { _ in reached.store(true, ordering: .relaxed) }
        }
        waiter.start()
        let workers = (0..<threads).map { n in
            WorkerThread(name: "adder\(n)") {
                for _ in 0..<each { counter.change { $0 += 1 } }
            }
        }
        workers.forEach { $0.start() }
        workers.forEach { $0.join() }
        waiter.join()
        XCTAssertTrue(reached.load(ordering: .relaxed))
        XCTAssertEqual(counter.withLock { $0 }, threads * each)
    }

    func testAMonitorWaitWithADeadlineEndsAtItWhenTheStateNeverSaysSo() {
        let flag = Monitor(false)
        let start = MonotonicClock.now()
        let ready = flag.wait(until: { $0 }, nanoseconds: 100_000_000) { _, ready in ready }
        XCTAssertFalse(ready)
        XCTAssertGreaterThanOrEqual(MonotonicClock.now() - start, 100_000_000)
        flag.change { $0 = true }
        XCTAssertTrue(flag.wait(until: { $0 }, nanoseconds: 0) { _, ready in ready }, "a state that says so answers at once")
    }

    /// BlockingQueue: its ring is touched only with its lock held, so between two givers and two
    /// takers every element is handed over exactly once, and close ends the takers.
    func testABlockingQueueBetweenTwoGiversAndTwoTakersHandsOverEachElementOnce() {
        let queue = BlockingQueue<Int>(capacity: 4)
        let perGiver = 5_000
        let taken = Mutex<[Int]>([])
        let takers = (0..<2).map { n in
            WorkerThread(name: "taker\(n)") {
                var mine: [Int] = []
                while let element = queue.pop() { mine.append(element) }
                taken.withLock { $0 += mine }
            }
        }
        let givers = (0..<2).map { n in
            WorkerThread(name: "giver\(n)") {
                for i in 0..<perGiver { queue.push(n * perGiver + i) }
            }
        }
        takers.forEach { $0.start() }
        givers.forEach { $0.start() }
        givers.forEach { $0.join() }
        queue.close()
        takers.forEach { $0.join() }
        XCTAssertEqual(taken.withLock { $0.sorted() }, Array(0..<(2 * perGiver)))
    }

    /// WorkerThread: its handle belongs to the thread that starts and joins it, and what the body wrote
    /// is seen by that thread after `join`.
    func testWhatAWorkerThreadsBodyWroteIsSeenAfterJoin() {
        final class Box: @unchecked Sendable { var values: [Int] = [] }   // written by the body, read after join
        let box = Box()
        let worker = WorkerThread(name: "writer") {
            for i in 0..<1_000 { box.values.append(i) }
        }
        worker.start()
        worker.join()
        XCTAssertEqual(box.values, Array(0..<1_000))
        worker.join()   // a second join is nothing
    }

    /// ThreadExecutor: a task that prefers it runs every job on its one thread, across awaits, and
    /// `shutdown` returns once that thread has ended.
    func testATaskPreferringAThreadExecutorRunsOnItsThreadAcrossAwaits() async {
        let executor = ThreadExecutor(name: "executor-test")
        let task = Task(executorPreference: executor) { () -> [String] in
            var names = [currentThreadName()]
            for _ in 0..<3 {
                await Task.yield()
                try? await Task.sleep(nanoseconds: 1_000_000)
                names.append(currentThreadName())
            }
            return names
        }
        let names = await task.value
        XCTAssertEqual(names, Array(repeating: "executor-test", count: 4))
        executor.shutdown()
    }
}

/// The calling thread's name, as /proc shows it.
private func currentThreadName() -> String {
    guard let file = fopen("/proc/thread-self/comm", "r") else { return "?" }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 32)
    _ = fgets(&line, 32, file)
    return String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
