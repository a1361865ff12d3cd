import Outputs
import Synchronization
import XCTest

@testable import HTTPServer

final class LiveMetricsTests: XCTestCase {
    private func value(_ text: String, _ series: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.map { String($0.dropFirst(series.count + 1)) }
    }

    func testCountersNeverGoDownAndEverySeriesShowsFromZero() {
        let encoded = Mutex(10)
        let metrics = LiveMetrics {
            var s = LiveMetrics.Snapshot()
            s.framesEncoded = encoded.withLock { $0 }
            var counters = OutputCounters()
            counters.peers = 2
            s.outputs = [(label: "out \"1\".mp4", kind: "file", counters: counters)]
            return s
        }
        func render() -> String { String(decoding: metrics.render(), as: UTF8.self) }
        XCTAssertEqual(value(render(), "camrec_frames_encoded_total"), "10")
        encoded.withLock { $0 = 5 }
        XCTAssertEqual(value(render(), "camrec_frames_encoded_total"), "10", "a counter never goes down")
        encoded.withLock { $0 = 12 }
        let text = render()
        XCTAssertEqual(value(text, "camrec_frames_encoded_total"), "12")
        XCTAssertEqual(value(text, "camrec_frames_dropped_total"), "0")
        XCTAssertEqual(value(text, #"camrec_output_receivers{output="out \"1\".mp4",kind="file"}"#), "2.0")
    }

    func testHistogramsCountEachRecordedFrame() {
        let metrics = LiveMetrics { LiveMetrics.Snapshot() }
        metrics.record(encodeNanoseconds: 3_000_000, captureToOutputsNanoseconds: 40_000_000)
        metrics.record(encodeNanoseconds: nil, captureToOutputsNanoseconds: 70_000_000)
        let text = String(decoding: metrics.render(), as: UTF8.self)
        XCTAssertEqual(value(text, "camrec_encode_seconds_count"), "1")
        XCTAssertEqual(value(text, "camrec_capture_to_outputs_seconds_count"), "2")
        XCTAssertEqual(value(text, #"camrec_capture_to_outputs_seconds_bucket{le="0.05"}"#), "1")
    }
}
