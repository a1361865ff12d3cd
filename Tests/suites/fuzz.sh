#!/bin/bash
# Tests/suites/fuzz.sh — libFuzzer on camrec's parsers of outside bytes (Fuzz/), each for a bounded time:
#   FuzzReassembler  AnnexBScanner (whole, and keeping a prefix of each unit as inspect does),
#                    AccessUnitAssembler and its open-access-unit count (the receiver's bound), the
#                    timing SEI; each input reassembled whole and in pieces, results must agree;
#   FuzzParsers      SPS, PPS and slice-header parsers, and the access-unit bound from any SPS;
#   FuzzWriter       AnnexBStreamWriter on any access unit: no trap, 4-byte start codes out;
#   FuzzRTSP         the RTSP request and interleaved-frame parser (whole, a byte at a time and in pieces:
#                    the same messages and error, within its bounds), RTCP receiver reports as a session
#                    reads them (every interleaved frame: read or ignored, within bounds), Transport.
# Any difference, trap or crash fails. Seeds: real access units from camrec and from ffmpeg's
# libx264 (3-byte start codes), plus the corpus kept from earlier runs (one corpus per target).
#
# Environment: FUZZ_SECONDS=N   how long to fuzz each target (default 20: four targets, 80 s;
#                              the full run must fit 30 minutes; a corpus kept on the machine carries over)
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
seconds=${FUZZ_SECONDS:-20}

summary() { echo "$1 passed, $2 failed"; [[ $2 -eq 0 ]]; exit $?; }

if ! (cd Fuzz && swift build -c release --sanitize=fuzzer 2>&1 | tail -n 3); then
    echo "fuzz: the fuzz package did not build"; summary 0 1
fi
seeds=Fuzz/corpus
mkdir -p "$seeds"
work=$(mktemp -d /tmp/camrec-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
if command -v ffmpeg >/dev/null; then
    ffmpeg -v error -f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 6 -c:v libx264 -g 3 -bf 1 -f h264 "$work/x264.h264" \
        && head -c 4000 "$work/x264.h264" >"$seeds/seed-x264"
fi
# A camrec network stream (with timing notes), cut at a few places.
if [[ -n ${CAMREC:-} && -x $CAMREC ]]; then
    "$CAMREC" --test-pattern --size 64x48 --frames 4 "$work/camrec.h264" 2>/dev/null && head -c 4000 "$work/camrec.h264" >"$seeds/seed-camrec"
fi
printf 'OPTIONS rtsp://127.0.0.1:8554/ RTSP/1.0\r\nCSeq: 1\r\n\r\n$\x01\x00\x08\x81\xc9\x00\x01\x00\x00\x00\x01SET_PARAMETER * RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 3\r\n\r\nabc' >"$seeds/seed-rtsp"
printf '\x00\x00\x00\x01\x67\x42\x00\x1e\x00\x00\x01\x68\xce\x3c\x80\x00\x00\x00\x01\x65\x88\x84\x00\x00\x03\x01\x00\x00\x00\x00\x01\x41\x9a' >"$seeds/seed-tiny"

passed=0 failed=0
for target in FuzzReassembler FuzzParsers FuzzWriter FuzzRTSP; do
    fuzzer=Fuzz/.build/release/$target
    [[ -x $fuzzer ]] || { echo "fuzz: no $fuzzer"; failed=$((failed + 1)); continue; }
    corpus=$seeds/$target
    mkdir -p "$corpus"
    cp -n "$seeds"/seed-* "$corpus"/ 2>/dev/null
    echo "fuzz: $target for ${seconds}s"
    SWIFT_BACKTRACE=enable=no "$fuzzer" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$work/$target-" -print_final_stats=1 "$corpus" >"$work/$target.log" 2>&1
    rc=$?
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs" "$work/$target.log" | tail -n 3
    if [[ $rc -ne 0 ]]; then
        tail -n 40 "$work/$target.log"
        for a in "$work/$target"-crash-* "$work/$target"-timeout-* "$work/$target"-leak-*; do
            [[ -e $a ]] && { echo "fuzz: $target failing input ($a):"; od -A d -t x1 "$a" | head -n 20; }
        done
        echo "FAIL  $target"; failed=$((failed + 1))
    else
        echo "PASS  $target: no trap, crash or disagreement in ${seconds}s"; passed=$((passed + 1))
    fi
done
summary $passed $failed
