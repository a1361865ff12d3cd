#!/bin/bash
# Tests/suites/fuzz-reassembler.sh — libFuzzer on camrec's stream reassembly (Fuzz/: AnnexBScanner,
# AccessUnitAssembler, the timing SEI) for a bounded time. Each input is reassembled whole and in
# pieces of varying size; any difference, trap or crash fails. Seeds: a few real access units from
# camrec and from ffmpeg's libx264 (3-byte start codes), plus the corpus kept from earlier runs.
#
# Environment: FUZZ_SECONDS=N   how long to fuzz (default 60)
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
seconds=${FUZZ_SECONDS:-60}

summary() { echo "$1 passed, $2 failed"; [[ $2 -eq 0 ]]; exit $?; }

if ! (cd Fuzz && swift build -c release --sanitize=fuzzer 2>&1 | tail -n 3); then
    echo "fuzz-reassembler: the fuzz package did not build"; summary 0 1
fi
fuzzer=Fuzz/.build/release/FuzzReassembler
[[ -x $fuzzer ]] || { echo "fuzz-reassembler: no $fuzzer"; summary 0 1; }

corpus=Fuzz/corpus
mkdir -p "$corpus"
work=$(mktemp -d /tmp/camrec-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
if command -v ffmpeg >/dev/null; then
    ffmpeg -v error -f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 6 -c:v libx264 -g 3 -bf 1 -f h264 "$work/x264.h264" \
        && head -c 4000 "$work/x264.h264" >"$corpus/seed-x264"
fi
# A camrec network stream (with timing notes), cut at a few places.
if [[ -n ${CAMREC:-} && -x $CAMREC ]]; then
    "$CAMREC" --test-pattern --size 64x48 --frames 4 "$work/camrec.h264" 2>/dev/null && head -c 4000 "$work/camrec.h264" >"$corpus/seed-camrec"
fi
printf '\x00\x00\x00\x01\x67\x42\x00\x1e\x00\x00\x01\x68\xce\x3c\x80\x00\x00\x00\x01\x65\x88\x84\x00\x00\x03\x01\x00\x00\x00\x00\x01\x41\x9a' >"$corpus/seed-tiny"

echo "fuzz-reassembler: fuzzing for ${seconds}s"
SWIFT_BACKTRACE=enable=no "$fuzzer" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$work/" -print_final_stats=1 "$corpus" >"$work/fuzz.log" 2>&1
rc=$?
grep -E "^#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs" "$work/fuzz.log" | tail -n 4
if [[ $rc -ne 0 ]]; then
    tail -n 40 "$work/fuzz.log"
    for a in "$work"/crash-* "$work"/timeout-* "$work"/leak-*; do
        [[ -e $a ]] && { echo "fuzz-reassembler: failing input ($a):"; od -A d -t x1 "$a" | head -n 20; }
    done
    summary 0 1
fi
summary 1 0
