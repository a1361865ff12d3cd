import XCTest

@testable import Audio

/// The test tone is what the sync measurement relies on: a 10 ms 1 kHz burst starting exactly at the
/// first sample of each second, silence everywhere else, on the clock it was started at.
final class TestToneSourceTests: XCTestCase {
    func testTheBurstStartsAtTheFirstSampleOfEachSecondAndLasts10Milliseconds() {
        for format in [AudioFormat(sampleRate: 48000, channels: 1), AudioFormat(sampleRate: 44100, channels: 2)] {
            let tone = TestToneSource(format: format)
            tone.start(origin: 5_000_000_000)
            var samples: [Float] = []
            var plane = [Float](repeating: 0, count: 1024)
            // Blocks of 1024 straddle the second boundaries at odd places.
            while samples.count < 2 * format.sampleRate + 4096 {
                plane.withUnsafeMutableBufferPointer { tone.write(channel: format.channels - 1, into: $0) }
                tone.advance(1024)
                samples += plane
            }
            let burst = format.sampleRate / 100
            let loud = samples.indices.filter { abs(samples[$0]) > 1e-6 }
            let expected = (0..<3).flatMap { second in (second * format.sampleRate..<(second * format.sampleRate + burst)) }
            // A sine starts at 0 and crosses it every half period: those samples are silent too.
            XCTAssertEqual(Set(loud).subtracting(expected), [], "\(format): sound outside the bursts")
            XCTAssertGreaterThan(loud.filter { $0 < burst }.count, burst * 9 / 10, "\(format): the first burst")
            XCTAssertGreaterThan(loud.filter { $0 >= format.sampleRate && $0 < format.sampleRate + burst }.count, burst * 9 / 10)
            XCTAssertEqual(Double(samples.map(abs).max()!), Double(TestToneSource.burstAmplitude), accuracy: 0.01)
            XCTAssertEqual(tone.captureTime(ofSample: UInt64(format.sampleRate)), 6_000_000_000, "sample rate samples later is a second later")
        }
    }

    func testSampleTimesAreExactForAWeekOfSamples() {
        let format = AudioFormat(sampleRate: 44100, channels: 1)
        let week: UInt64 = 7 * 86_400
        XCTAssertEqual(format.nanoseconds(ofSample: week * 44100), week * 1_000_000_000)
        XCTAssertEqual(format.nanoseconds(ofSample: week * 44100 + 441), week * 1_000_000_000 + 10_000_000)
    }
}
