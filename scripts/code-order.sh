#!/bin/bash
# scripts/code-order.sh BINARY [OUT=packaging/camrec.order]: writes the function order the package is linked
# with (scripts/package.sh gives it to lld as --symbol-ordering-file).
#
# Why: the kernel maps a cached file's pages 64 KiB at a time around each one touched (fault-around), so a
# function run once keeps its whole 64 KiB block of the binary resident. The code a recording runs is about
# 1.1 MB, but left where the linker puts it (object by object) it is spread over some 180 blocks, 8 MiB of
# resident code. Compiled with function sections (package.sh) and laid out in this order, it lies together.
#
# How: BINARY (camrec unstripped, linked as the package is: --static-swift-stdlib; valgrind 3.19 stops in
# the shared libdispatch's first thread) runs a few frames of the usual recordings under
# valgrind's callgrind: raw 1080p YUYV from a file to H.264 (benchmarks/compare-ffmpeg.sh's raw line), the
# same into MP4, and the test pattern into MP4. Every function any of them ran that is not in a system
# library is written out by its symbol name, the most run first. A symbol the link does not have is skipped
# by lld, so an order older than the source costs only the functions added since. Needs valgrind and ffmpeg;
# about a minute. After it, relink (package.sh) and check the layout: the hot code of the package of
# 2026-11-27 lay in 53 blocks ordered against 184 unordered (docs/PERFORMANCE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: scripts/code-order.sh BINARY [OUT]}
out=${2:-packaging/camrec.order}
for tool in valgrind ffmpeg strip; do
    command -v "$tool" >/dev/null || { echo "code-order.sh: $tool is missing" >&2; exit 69; }
done
work=$(mktemp -d /tmp/camrec-order.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Valgrind 3.19 (Debian 12) cannot read the DWARF 5 the toolchain writes; the symbol table is all it needs.
strip --strip-debug -o "$work/camrec" "$bin"
bin=$work/camrec
# 40 frames: past the second IDR (GOP 30), into the steady state. Rerun it when functions are renamed: by
# 2026-11-28 renames had taken 556 of the 4141 names of the order of 2026-11-27 (0.4 MiB at the peak).
frames=40
ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30" -frames:v $frames -pix_fmt yuyv422 -f rawvideo "$work/in.yuyv"
raw=(--input "$work/in.yuyv" --input-format yuyv --size 1920x1080 --fps 30 --keyframe-interval 30 --preset ultrafast --bitrate 6M)
profile() {   # name, camrec arguments...
    local name=$1; shift
    valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no --separate-recs=1 \
        --callgrind-out-file="$work/$name.out" "$bin" "$@" >"$work/$name.log" 2>&1 \
        || { tail -n 20 "$work/$name.log" >&2; echo "code-order.sh: camrec $* failed under valgrind" >&2; exit 70; }
}
profile raw "${raw[@]}" --overwrite "$work/raw.h264"
profile mp4 "${raw[@]}" --overwrite "$work/raw.mp4"
profile pattern --test-pattern --frames $frames --overwrite "$work/pattern.mp4"

# callgrind's fn= lines name each function that ran, under the ob= (object) line before them; the cost
# lines after a fn= are its own instructions. System libraries are not in camrec's link.
python3 - "$out" "$work"/raw.out "$work"/mp4.out "$work"/pattern.out <<'EOF'
import collections, sys
cost = collections.Counter()
for path in sys.argv[2:]:
    ob = fn = None
    after_call = False   # the line after calls= is the call's inclusive cost, not the caller's own
    for line in open(path, errors="replace"):
        if after_call:
            after_call = False
        elif line.startswith("ob="):
            ob = line[3:].strip()
        elif line.startswith("fn="):
            fn = line[3:].strip().split("'")[0]
            if (ob or "").startswith(("/usr/lib", "/lib", "/usr/libexec/valgrind")):
                fn = None
            else:
                cost[fn] += 0
        elif line.startswith("calls="):
            after_call = True
        elif fn and line[:1].isdigit():
            parts = line.split()
            if len(parts) >= 2:
                cost[fn] += int(parts[1])
order = sorted(cost, key=lambda f: (-cost[f], f))
with open(sys.argv[1], "w") as f:
    f.write("".join(name + "\n" for name in order))
print(f"code-order.sh: {len(order)} functions into {sys.argv[1]}")
EOF
