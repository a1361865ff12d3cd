#!/bin/bash
# Tests/suites/hostile-input.sh — `camrec receive` and `camrec inspect` against hostile input, on
# loopback with real sockets (Tests/tools/hostile-peer.py as the peer) and ffprobe as the judge.
#
# Checks: a sender that keeps an access unit open after the stream started (filler units, or
# slices with first_mb_in_slice=1) is dropped with one line once past the SPS level's bound, and
# the receiver's peak memory stays far below what was sent; a sender that resets right after its
# last frame loses none; a stream whose every frame fails to decode exits 65 with one line;
# inspect: a 256 MiB NAL unit in bounded memory, random data with one start code is "not H.264"
# (65), an unreadable file is "permission denied" (69), a stream cut inside a slice passes the
# contract but fails --decode (1), and the verdict says what was checked.
#
# Environment: CAMREC=path   test this binary instead of building with `swift build`
#              KEEP=1        keep the work directory
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
SUITE=hostile-input
source Tests/lib/net-suite.sh

"$CAMREC" --test-pattern --size 320x240 --frames 90 "$W/tp.h264" 2>/dev/null
expected=$(frames_of "$W/tp.h264")
[[ $expected -gt 0 ]] || { fail "no reference stream"; finish; }

# --- An access unit that never ends, two ways ---
for mode in filler slices; do
    next_port
    "$CAMREC" receive --listen "$PORT" "$W/$mode.h264" 2>"$W/$mode.log" & rp=$!; PIDS+=($rp)
    wait_listen "$PORT"
    # 400 MB offered; today's main takes it all and grows to GBs.
    sent=$($PEER send-then-flood "$mode" 127.0.0.1 "$PORT" "$W/tp.h264" 400000000)
    wait_log "$W/$mode.log" "disconnecting after" 1 10
    hwm=$(vm_hwm_kb $rp)
    kill -INT $rp; wait_for $rp 10; rc=$?
    check "$mode flood: the sender is dropped with one line naming the level's bound" \
        grep -q "sent an access unit of over .* more than level 1.3 allows for 320x240 (limit [0-9]* bytes); disconnecting" "$W/$mode.log"
    # The bound for level 1.3 is 1.8 MB; socket buffers on loopback hold a few MB more.
    check "$mode flood: dropped after $sent bytes (under 32 MB of the 400 MB offered)" test "$sent" -lt 32000000
    # camrec receive itself runs in about 40 MB; one bounded access unit and its copies add under 20 MB.
    check "$mode flood: peak memory ${hwm} kB stays under 100 MB" test "$hwm" -lt 100000
    check "$mode flood: the frame before the flood is kept, exit 0 (status $rc)" test $rc -eq 0 -a "$(frames_of "$W/$mode.h264")" = 1
done

# --- A reset right after the last frame ---
# A bare stream says nothing of an access unit's length: after a reset the last one may have been cut
# anywhere, so receive leaves it out (camrec's own sender resets only a connection it gives up inside
# an access unit). With the sender's timing notes the length is known, and every frame is kept.
"$CAMREC" --test-pattern --size 320x240 --frames 90 --timing-sei "$W/tp-timed.h264" 2>/dev/null
python3 - "$W/tp.h264" "$W/tp-timed.h264" "$W/tp-but-last.h264" "$W/tp-untimed.h264" <<'PY'
import sys
bare, timed = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
# The bare stream without its last access unit: up to the last 4-byte start code of an SPS or a P slice.
cut = max(i for i in range(len(bare) - 4) if bare[i:i + 4] == b"\0\0\0\1" and bare[i + 4] & 0x1F in (1, 7))
open(sys.argv[3], "wb").write(bare[:cut])
units = timed.split(b"\0\0\0\1")[1:]
open(sys.argv[4], "wb").write(b"".join(b"\0\0\0\1" + u for u in units if not u.startswith(bytes([6, 5, 49, 0xc4, 0xa3]))))
PY
for kind in bare timed; do
    next_port
    "$CAMREC" receive --listen "$PORT" "$W/reset-$kind.h264" 2>"$W/reset-$kind.log" & rp=$!; PIDS+=($rp)
    wait_listen "$PORT"
    $PEER send-then-reset 127.0.0.1 "$PORT" "$W/$([[ $kind == bare ]] && echo tp || echo tp-timed).h264"
    wait_log "$W/reset-$kind.log" "went away" 1 10
    kill -INT $rp; wait_for $rp 10; rc=$?
    if [[ $kind == bare ]]; then
        check "reset after the last frame, bare stream: every frame but the last kept ($((expected - 1)); got $(frames_of "$W/reset-bare.h264"), status $rc)" \
            test "$(frames_of "$W/reset-bare.h264")" = "$((expected - 1))" -a $rc -eq 0
        check "reset after the last frame, bare stream: the copy is the sender's stream up to its last access unit, byte for byte" \
            cmp -s "$W/tp-but-last.h264" "$W/reset-bare.h264"
        check "reset after the last frame, bare stream: one line says the last access unit was left out and why" \
            grep -q "dropped the last access unit from .*: the connection was reset, and a bare stream cannot show that it arrived whole" "$W/reset-bare.log"
    else
        check "reset after the last frame, with timing notes: all $expected frames kept (got $(frames_of "$W/reset-timed.h264"), status $rc)" \
            test "$(frames_of "$W/reset-timed.h264")" = "$expected" -a $rc -eq 0
        check "reset after the last frame, with timing notes: the copy is the sender's stream without its notes, byte for byte" \
            cmp -s "$W/tp-untimed.h264" "$W/reset-timed.h264"
    fi
done

# --- Every frame fails to decode ---
next_port
"$CAMREC" receive --listen "$PORT" "$W/broken.h264" 2>"$W/broken.log" & rp=$!; PIDS+=($rp)
wait_listen "$PORT"
$PEER send-damaged 127.0.0.1 "$PORT" "$W/tp.h264"
wait_log "$W/broken.log" "ended the stream" 1 10
kill -INT $rp; wait_for $rp 10; rc=$?
check "undecodable stream: exit 65 (got $rc)" test $rc -eq 65
check "undecodable stream: one line says every frame failed" grep -q "error: every one of the [0-9]* frames received failed to decode" "$W/broken.log"

# --- inspect ---
python3 - "$W/tp.h264" >"$W/big.h264" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
out = sys.stdout.buffer
out.write(d[:2000])
out.write(b"\x00\x00\x00\x01\x0c")
block = b"\xff" * (1 << 20)
for _ in range(256):
    out.write(block)
PY
/usr/bin/time -o "$W/big.rss" -f "%M" "$CAMREC" inspect --summary "$W/big.h264" >"$W/big.txt" 2>&1
peak=$(tail -n 1 "$W/big.rss")
# A 256 MiB unit held whole needs at least 256 MiB; headers only, about 30 MB.
check "inspect: a 256 MiB NAL unit in ${peak} kB (under 100 MB)" test "$peak" -lt 100000
check "inspect: and its size is reported whole" grep -q "268435457" <("$CAMREC" inspect "$W/big.h264")

python3 -c "
import random, sys
r = random.Random(1); b = bytes(x or 1 for x in r.randbytes(50000))
open(sys.argv[1], 'wb').write(b[:25000] + b'\x00\x00\x00\x01' + b[25000:])" "$W/random.bin"
"$CAMREC" inspect --summary "$W/random.bin" >/dev/null 2>"$W/random.err"; rc=$?
check "inspect: random data with one start code is not H.264 (65, got $rc)" test $rc -eq 65
check "inspect: and says so" grep -q "is not H.264" "$W/random.err"

cp "$W/tp.h264" "$W/secret.h264"; chmod 600 "$W/secret.h264"; chmod 755 "$W"
setpriv --reuid=65534 --regid=65534 --clear-groups "$CAMREC" inspect "$W/secret.h264" >/dev/null 2>"$W/secret.err"; rc=$?
check "inspect: an unreadable file exits 69 (got $rc)" test $rc -eq 69
check "inspect: and says permission denied, not 'does not exist'" grep -q "cannot read .*: permission denied" "$W/secret.err"

head -c 60000 "$W/tp.h264" >"$W/cut.h264"
"$CAMREC" inspect --summary "$W/cut.h264" >"$W/cut.txt" 2>&1; rc=$?
check "inspect: a stream cut inside a slice keeps the contract (0, got $rc)" test $rc -eq 0
check "inspect: the verdict says slice data was not decoded" grep -q "slice data not decoded (add --decode)" "$W/cut.txt"
"$CAMREC" inspect --summary --decode "$W/cut.h264" >"$W/cut-decode.txt" 2>&1; rc=$?
check "inspect --decode: the cut slice fails (1, got $rc)" test $rc -eq 1
check "inspect --decode: the verdict names the failing access unit" grep -q "decode: BROKEN — libavcodec decoded [0-9]* of [0-9]* pictures; 1 access unit failed" "$W/cut-decode.txt"
"$CAMREC" inspect --summary --decode "$W/tp.h264" >"$W/whole-decode.txt" 2>&1; rc=$?
check "inspect --decode: the whole stream decodes ($expected pictures, status $rc)" \
    grep -q "libavcodec decoded all $expected pictures without an error" "$W/whole-decode.txt"

finish
