import Foundation
import Glibc
import Hub
import NetStream
import Outputs
import Synchronization
import XCTest

/// Real sockets on loopback, synthetic access units.
final class EventBox: @unchecked Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    func withLock<R>(_ body: ([String]) -> R) -> R { lines.withLock { body($0) } }
}

/// Bytes read by a helper thread.
final class BytesBox: @unchecked Sendable {
    private let bytes = Mutex<[UInt8]>([])
    func set(_ b: [UInt8]) { bytes.withLock { $0 = b } }
    func withLock<R>(_ body: ([UInt8]) -> R) -> R { bytes.withLock { body($0) } }
}

/// How many bytes a helper thread has read so far.
final class ReadCount: Sendable {
    let bytes = Atomic<Int>(0)
}

final class TCPOutputTests: XCTestCase {
    let pool = StreamChunkPool()
    let events = EventBox()
    /// What the outputs under test subscribe to; `publish` stands for the recorder.
    lazy var hub = StreamHub(label: "test", keyframes: gate)
    var gate = KeyframeGate(minimumIntervalSeconds: 0)

    /// The end of the recording: the hub closes, then the output settles.
    func finishing(_ output: StreamOutput) -> OutputReport {
        hub.close()
        return output.finish()
    }

    func chunk(_ sequence: Int, idrEvery: Int = 30, size: Int = 2000) -> StreamChunk {
        let c = pool.take()
        let idr = sequence % idrEvery == 0
        if idr { c.fill { $0 += [0, 0, 0, 1, 0x67, 0x42, 0, 0x1E, 0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80] } }
        c.fill { $0 += [0, 0, 0, 1, idr ? 0x65 : 0x41, 0x88] }
        c.fill { $0 += [UInt8](repeating: 0xAA, count: size) }
        c.isIDR = idr
        c.sequence = UInt64(sequence)
        c.captureTimeNanoseconds = 1
        c.retain()
        return c
    }

    func makeListener(queueCapacity: Int = 30) throws -> TCPListenOutput {
        let output = TCPListenOutput(endpoint: TCPEndpoint(host: "127.0.0.1", port: 0, listen: true),
                                     queueCapacity: queueCapacity, stallTimeoutSeconds: 3, sendsTimingSEI: true) { [events] line in events.append(line) }
        try output.open(hub: hub)
        return output
    }

    func connect(_ port: UInt16) throws -> TCPConnection {
        try TCPConnection.connect(host: "127.0.0.1", port: port, timeoutMilliseconds: 1000)
    }

    func waitFor(_ what: String, _ condition: () -> Bool) {
        for _ in 0..<500 where !condition() { usleep(20_000) }
        XCTAssertTrue(condition(), what)
    }

    /// Everything a connection delivers until end of stream (or 3 s of silence).
    static func readAll(_ c: TCPConnection, read: ReadCount? = nil) -> [UInt8] {
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let r = try? buffer.withUnsafeMutableBytes { try c.receive(into: $0, timeoutMilliseconds: 3000) }
            guard case .bytes(let n)? = r else { return all }
            all += buffer[0..<n]
            read?.bytes.store(all.count, ordering: .releasing)
        }
    }

    func testAJoinerStartsAtAnIDRAndGetsEveryAccessUnitWhole() throws {
        let output = try makeListener()
        let client = try connect(output.boundPort)
        waitFor("joined") { events.withLock { $0.contains { $0.contains("joined") } } }
        for i in 5..<70 {
            hub.publish(chunk(i))
            usleep(1000)  // a fast camera, but not a burst no queue could take
        }
        let report = finishing(output)
        let units = { var a = AccessUnitAssembler(); return a.append(Self.readAll(client)) + a.finish() }()
        // Frames 5...29 come before the first IDR: not sent. 30...69 are.
        XCTAssertEqual(units.map { $0.timestamp?.sequence }, (30..<70).map { UInt64($0) })
        XCTAssertTrue(units[0].isIDR && units[0].hasSPS && units[0].hasPPS)
        XCTAssertTrue(units.allSatisfy { !$0.isTruncated })
        XCTAssertEqual(report.frames, 40)
        XCTAssertEqual(report.idrFrames, 2, "the IDRs at 30 and 60")
        XCTAssertEqual(report.skippedFrames, 0)
    }

    func testAReceiverThatNeverReadsNeitherBlocksSubmitNorHurtsAnother() throws {
        let output = try makeListener(queueCapacity: 60)
        let stalled = try connect(output.boundPort)
        let reader = try connect(output.boundPort)
        waitFor("both joined") { events.withLock { $0.filter { $0.contains("joined") }.count == 2 } }
        let received = BytesBox()
        let read = ReadCount()
        let thread = Thread { received.set(Self.readAll(reader, read: read)) }
        thread.start()
        // 400 access units of 20 kB every 3 ms (6.7 MB/s): the stalled receiver's kernel buffers
        // fill within a few dozen, then its queue, and from then on it skips to IDRs. A submit
        // that waited for the stalled receiver would never return: the loop runs on its own thread
        // and must end within 60 s (it takes about 1.3 s), else the test fails instead of hanging.
        // Each unit waits until the reader has read all but 30 (half its queue): the reader is then
        // never too slow itself, however late its thread runs (under CI's load it once fell 72 behind
        // and rightly skipped to an IDR).
        let submitted = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let test = self  // only its chunk maker is used, on that one thread
        let submitter = Thread {
            let deadline = DispatchTime.now() + 50
            for i in 0..<400 {
                while read.bytes.load(ordering: .acquiring) < (i - 30) * 20_000 && DispatchTime.now() < deadline { usleep(1000) }
                test.hub.publish(test.chunk(i, size: 20_000))
                usleep(3000)
            }
            submitted.signal()
        }
        submitter.start()
        guard submitted.wait(timeout: .now() + 60) == .success else {
            // The submitting thread stays blocked; the output is left as it is (finish would block too).
            return XCTFail("submit blocked on a receiver that never reads")
        }
        _ = finishing(output)
        waitFor("reader done") { received.withLock { !$0.isEmpty } }
        let units = received.withLock { bytes -> [ReceivedAccessUnit] in var a = AccessUnitAssembler(); return a.append(bytes) + a.finish() }
        let log = events.withLock { $0 }
        XCTAssertTrue(log.contains { $0.contains("too slow, skipped") }, log.joined(separator: "\n"))
        // Only the stalled one skipped: the reader got a gap-free run from frame 0.
        let sequences = units.compactMap { $0.timestamp?.sequence }
        XCTAssertEqual(sequences.first, 0)
        XCTAssertEqual(sequences, (0..<UInt64(sequences.count)).map { $0 }, "the reading receiver lost nothing")
        XCTAssertEqual(sequences.count, 400)
        _ = stalled
    }

    func makeListener(stallTimeoutSeconds: Double) throws -> TCPListenOutput {
        let output = TCPListenOutput(endpoint: TCPEndpoint(host: "127.0.0.1", port: 0, listen: true),
                                     queueCapacity: 60, stallTimeoutSeconds: stallTimeoutSeconds, sendsTimingSEI: true) { [events] line in events.append(line) }
        try output.open(hub: hub)
        return output
    }

    /// The number after `label` in the log line for `peer` that contains `marker`.
    func count(_ label: String, in marker: String) -> Int? {
        events.withLock { lines -> Int? in
            guard let line = lines.last(where: { $0.contains(marker) }) else { return nil }
            let words = line.replacingOccurrences(of: ",", with: "").split(separator: " ").map(String.init)
            guard let i = words.firstIndex(of: label), i > 0 else { return label == "skipped" || label == "not" ? 0 : nil }
            return Int(words[i - 1])
        }
    }

    /// A receiver that closes is let go at once, even while it waits for an IDR and nothing is sent to it.
    func testAClosedReceiverLeavesWithoutWaitingForTheNextIDR() throws {
        let output = try makeListener()
        let client = try connect(output.boundPort)
        waitFor("joined") { events.withLock { $0.contains { $0.contains("joined") } } }
        hub.publish(chunk(1))  // mid-GOP: not sent, it waits for an IDR
        client.close()
        // No submit from here on: only noticing the close can produce the line.
        waitFor("left without a send") { events.withLock { $0.contains { $0.contains(" left after 0 frames") } } }
        _ = finishing(output)
    }

    /// Sent + skipped + not sent (before its first IDR, after it left) + recorded while it was
    /// not connected = recorded, for one receiver whose join and leave the test controls.
    func testFramesCountedPerReceiverAddUp() throws {
        let output = try makeListener()
        for i in 0..<10 { hub.publish(chunk(i)) }          // nobody connected: 10
        let client = try connect(output.boundPort)
        waitFor("joined") { events.withLock { $0.contains { $0.contains("joined") } } }
        for i in 10..<50 { hub.publish(chunk(i)) }          // 10...29 wait for the IDR at 30
        var assembler = AccessUnitAssembler()
        var units: [ReceivedAccessUnit] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while units.count < 19 {
            guard case .bytes(let n)? = try? buffer.withUnsafeMutableBytes({ try client.receive(into: $0, timeoutMilliseconds: 3000) }) else { break }
            units += assembler.append(buffer[0..<n])
        }
        units += assembler.finish()
        client.close()
        waitFor("left") { events.withLock { $0.contains { $0.contains(" left after ") } } }
        for i in 50..<60 { hub.publish(chunk(i)) }          // gone: 10
        let report = finishing(output)
        let marker = " left after "
        let sent = try XCTUnwrap(count("frames", in: marker))
        let skipped = try XCTUnwrap(count("skipped", in: marker))
        let notSent = try XCTUnwrap(count("not", in: marker))
        XCTAssertEqual(sent, units.count, "frames sent = access units the receiver got")
        XCTAssertEqual(units.map { $0.timestamp?.sequence }, (30..<50).map { UInt64($0) })
        XCTAssertEqual(sent + skipped + notSent + 10 + 10, 60, events.withLock { $0.joined(separator: "\n") })
        XCTAssertEqual(report.frames, sent)
    }

    /// A receiver that reads a little now and then (2 KiB every 300 ms from a 4 KiB receive
    /// buffer, so each read reopens its window: 7 kB/s against a 10 MB/s stream) makes
    /// progress, so no send stalls for the bound, but one 20 kB access unit takes it about
    /// 3 s: it is dropped once one access unit takes it over the bound (1 s here).
    func testAReceiverThatReadsFarSlowerThanTheStreamIsEvicted() throws {
        let output = try makeListener(stallTimeoutSeconds: 1)
        let slow = try connect(output.boundPort)
        waitFor("joined") { events.withLock { $0.contains { $0.contains("joined") } } }
        let stop = BytesBox()
        let thread = Thread {
            var size: Int32 = 4096
            _ = setsockopt(slow.descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            var buffer = [UInt8](repeating: 0, count: 2048)
            while stop.withLock({ $0.isEmpty }) {
                _ = try? buffer.withUnsafeMutableBytes { try slow.receive(into: $0, timeoutMilliseconds: 0) }
                usleep(300_000)  // the client's own pace, not a synchronisation
            }
        }
        thread.start()
        // Enough data to fill its kernel buffers many times over (40 MB).
        var i = 0
        while i < 2000 && !events.withLock({ $0.contains { $0.contains("fell behind") } }) {
            hub.publish(chunk(i, size: 20_000))
            usleep(2000)
            i += 1
        }
        waitFor("evicted") { events.withLock { $0.contains { $0.contains("fell behind") } } }
        waitFor("slot freed") { events.withLock { $0.contains { $0.contains(" left after ") } } }
        stop.set([1])
        _ = finishing(output)
    }

    func testSkippingResumesOnlyAtAnIDR() throws {
        let output = try makeListener(queueCapacity: 8)
        let client = try connect(output.boundPort)
        waitFor("joined") { events.withLock { $0.contains { $0.contains("joined") } } }
        // Don't read until everything is submitted, so the kernel buffers fill and the queue overflows.
        for i in 0..<400 {
            hub.publish(chunk(i, idrEvery: 25, size: 20_000))
            usleep(1000)
        }
        let done = BytesBox()
        let thread = Thread { done.set(Self.readAll(client)) }
        thread.start()
        let report = finishing(output)
        waitFor("read") { done.withLock { !$0.isEmpty } }
        let units = done.withLock { bytes -> [ReceivedAccessUnit] in var a = AccessUnitAssembler(); return a.append(bytes) + a.finish() }
        XCTAssertGreaterThan(report.skippedFrames, 0)
        XCTAssertGreaterThan(report.frames, 25)
        XCTAssertEqual(units.count, report.frames)
        // Every jump in sequence numbers lands on an IDR, and no access unit is cut.
        var last: UInt64?
        for unit in units {
            let s = unit.timestamp!.sequence
            if let last, s != last + 1 { XCTAssertTrue(unit.isIDR, "jump \(last) → \(s) lands on an IDR") }
            last = s
            XCTAssertFalse(unit.isTruncated)
        }
    }

    func testPushReconnectsAndResumesAtAnIDR() throws {
        // Reserve a port, close it: the push output starts with nobody there.
        let probe = try TCPListener(host: "127.0.0.1", port: 0)
        let port = probe.port
        probe.close()
        let requests = Atomic<Int>(0)
        gate.connect { requests.add(1, ordering: .relaxed) }
        let output = TCPPushOutput(endpoint: TCPEndpoint(host: "127.0.0.1", port: port, listen: false), sendsTimingSEI: true) { [events] line in events.append(line) }
        try output.open(hub: hub)
        XCTAssertTrue(events.withLock { $0.contains { $0.contains("not reachable yet") } })
        for i in 0..<10 { hub.publish(chunk(i)) }  // dropped: nobody listens
        let listener = try TCPListener(host: "127.0.0.1", port: port)
        var connection: TCPConnection?
        for _ in 0..<60 where connection == nil { connection = try listener.accept(timeoutMilliseconds: 100) }
        let c = try XCTUnwrap(connection, "the push output reconnects within its backoff")
        waitFor("connected") { requests.load(ordering: .relaxed) >= 1 }
        for i in 10..<75 { hub.publish(chunk(i)) }
        let report = finishing(output)
        let units = { var a = AccessUnitAssembler(); return a.append(Self.readAll(c)) + a.finish() }()
        XCTAssertEqual(units.first?.timestamp?.sequence, 30, "resumes at the first IDR after connecting")
        XCTAssertEqual(units.count, 45)
        XCTAssertEqual(report.frames, 45)
        XCTAssertEqual(report.idrFrames, 2, "the IDRs at 30 and 60")
    }

    /// A receiver that is up before capture joins before frame 0 (an IDR): however late the push's
    /// event loop starts serving it, no second IDR is asked for (it once landed at frame 1 under load).
    func testAPushConnectedBeforeCaptureAsksForNoSecondIDR() throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        let requests = Atomic<Int>(0)
        gate.connect { requests.add(1, ordering: .relaxed) }
        let output = TCPPushOutput(endpoint: TCPEndpoint(host: "127.0.0.1", port: listener.port, listen: false),
                                   sendsTimingSEI: true) { [events] line in events.append(line) }
        try output.open(hub: hub)
        hub.publish(chunk(0))  // at once, before the loop is likely to have served the connection
        let c = try XCTUnwrap(try listener.accept(timeoutMilliseconds: 2000))
        for i in 1..<20 {
            usleep(5_000)
            hub.publish(chunk(i))
        }
        let report = finishing(output)
        let units = { var a = AccessUnitAssembler(); return a.append(Self.readAll(c)) + a.finish() }()
        XCTAssertEqual(units.map { $0.timestamp?.sequence }, (0..<20).map { UInt64($0) })
        XCTAssertEqual(report.frames, 20)
        XCTAssertEqual(requests.load(ordering: .relaxed), 0, "frame 0 was the connection's IDR; none more asked for")
    }

    /// `--listen PORT` (no host) takes IPv4 and IPv6 receivers on one dual-stack socket.
    func testAListenerWithoutAHostTakesIPv4AndIPv6Receivers() throws {
        let output = TCPListenOutput(endpoint: TCPEndpoint(host: nil, port: 0, listen: true), sendsTimingSEI: true) { [events] line in events.append(line) }
        try output.open(hub: hub)
        XCTAssertTrue(events.withLock { $0.contains { $0.contains("listening for receivers on tcp://[::]:") } }, events.withLock { $0.joined(separator: "\n") })
        let v4 = try connect(output.boundPort)
        let v6 = try TCPConnection.connect(host: "::1", port: output.boundPort, timeoutMilliseconds: 1000)
        waitFor("both joined") { events.withLock { $0.filter { $0.contains("joined") }.count == 2 } }
        for i in 0..<31 { hub.publish(chunk(i)) }
        let report = finishing(output)
        for client in [v4, v6] {
            let units = { var a = AccessUnitAssembler(); return a.append(Self.readAll(client)) + a.finish() }()
            XCTAssertEqual(units.map { $0.timestamp?.sequence }, (0..<31).map { UInt64($0) })
        }
        XCTAssertEqual(report.frames, 62)
    }

    func testKeyframeGateIsRateLimited() {
        let count = Atomic<Int>(0)
        let gate = KeyframeGate(minimumIntervalSeconds: 10)
        gate.connect { count.add(1, ordering: .relaxed) }
        XCTAssertTrue(gate.request())
        for _ in 0..<20 { XCTAssertFalse(gate.request()) }
        XCTAssertEqual(count.load(ordering: .relaxed), 1)
        XCTAssertEqual(gate.counts.refused, 20)
    }

    func testLatencyPercentiles() {
        var s = LatencySamples()
        for v in 1...100 { s.add(UInt64(v) * 1_000_000) }
        XCTAssertEqual(s.percentile(50), 50_000_000)
        XCTAssertEqual(s.percentile(99), 99_000_000)
        XCTAssertEqual(LatencySamples.milliseconds(1_234_567), "1.23")
    }
}
