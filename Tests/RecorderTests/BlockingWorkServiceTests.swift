import Logging
import Threading
import ServiceLifecycle
import Synchronization
import XCTest

/// The bridge between the media threads and the run's service group, in a real `ServiceGroup`.
final class BlockingWorkServiceTests: XCTestCase {
    /// What happened, in order.
    private final class Events: Sendable {
        private let list = Mutex<[String]>([])
        func note(_ event: String) { list.withLock { $0.append(event) } }
        var all: [String] { list.withLock { $0 } }
    }

    /// Stands for the HTTP server: serves until the group shuts it down, and notes when that was.
    private final class Helper: Service {
        let events: Events
        init(_ events: Events) { self.events = events }
        func run() async {
            try? await gracefulShutdown()
            events.note("helper stopped")
        }
    }

    /// Held by the work; slow to release, as a recording closing its VA display is, and says when it was.
    private final class SlowToRelease: Sendable {
        let events: Events
        init(_ events: Events) { self.events = events }
        deinit {
            usleep(200_000)
            events.note("released")
        }
    }

    private func group(_ services: [any Service]) -> ServiceGroup {
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let configurations = services.enumerated().map { index, service in
            ServiceGroupConfiguration.ServiceConfiguration(service: service,
                successTerminationBehavior: index == services.count - 1 ? .gracefullyShutdownGroup : .ignore)
        }
        return ServiceGroup(configuration: .init(services: configurations, logger: quiet))
    }

    func testWorkThatEndsByItselfEndsTheGroupAfterItAndKeepsItsOutcome() async throws {
        let events = Events()
        let work = BlockingWorkService(name: "work", work: { () -> Int in
            let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
            events.note("work on thread \(name.trimmingCharacters(in: .whitespacesAndNewlines))")
            usleep(50_000)
            events.note("work done")
            return 42
        }, stop: { events.note("stop asked") })
        try await group([Helper(events), work]).run()
        XCTAssertEqual(work.outcome, 42)
        XCTAssertEqual(events.all, ["work on thread work", "work done", "helper stopped"],
                       "on a thread of its own (named as given); no stop asked of work that ended; the helper stopped after it")
    }

    /// camrec exits right after the group ends: what the work held, released later on its thread, was
    /// once torn down while main was in exit() (a crash, exit 139). The thread is joined instead.
    func testWhatTheWorkHeldIsReleasedBeforeTheServiceEnds() async throws {
        let events = Events()
        let work = BlockingWorkService(name: "work", work: { [held = SlowToRelease(events)] () -> Int in
            withExtendedLifetime(held) { events.note("work done") }
            return 7
        }, stop: {})
        try await group([work]).run()
        events.note("group ended")
        XCTAssertEqual(work.outcome, 7)
        XCTAssertEqual(events.all, ["work done", "released", "group ended"], "what the work held is released before the group ends, not later on the work's thread")
    }

    func testAShutdownAsksTheWorkToStopAndWaitsForItBeforeStoppingTheServicesBeforeIt() async throws {
        let events = Events()
        let stopped = Atomic<Bool>(false)
        let work = BlockingWorkService(name: "work", work: { () -> String in
            // Blocking media work: it only ends when told to.
            while !stopped.load(ordering: .acquiring) { usleep(1_000) }
            usleep(100_000)
            events.note("work finished its files")
            return "finished"
        }, stop: {
            events.note("stop asked")
            stopped.store(true, ordering: .releasing)
        })
        let group = group([Helper(events), work])
        async let running: Void = group.run()
        try await Task.sleep(for: .milliseconds(100))
        XCTAssertNil(work.outcome, "still working")
        await group.triggerGracefulShutdown()
        try await running
        XCTAssertEqual(work.outcome, "finished")
        XCTAssertEqual(events.all, ["stop asked", "work finished its files", "helper stopped"])
    }

    func testACancelledGroupAlsoAsksTheWorkToStopAndStillWaitsForIt() async throws {
        let stopped = Atomic<Bool>(false)
        let work = BlockingWorkService(name: "work", work: { () -> Bool in
            while !stopped.load(ordering: .acquiring) { usleep(1_000) }
            return true
        }, stop: { stopped.store(true, ordering: .releasing) })
        let running = group([work])
        let task = Task { try await running.run() }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        _ = await task.result
        XCTAssertEqual(work.outcome, true, "the group ended only once the work had returned")
    }
}
