#!/bin/bash
# Tests/vm/v4l2loopback.sh — build (once) v4l2loopback.ko for the kernel the test VM boots,
# and print its path. vivid has no MJPEG; v4l2loopback turns whatever a writer (ffmpeg)
# sends into a real V4L2 capture node, MJPEG included.
#
# Debian's v4l2loopback-dkms carries the source; it is built against linux-headers-<KVER>
# (+ its -common and linux-kbuild packages), all fetched with `apt-get download` and unpacked
# with `dpkg -x`: nothing is installed. Needs gcc and make. Cached beside the VM's kernel:
# <cache>/<KVER>/v4l2loopback-stamped/v4l2loopback.ko (a few seconds to build, ~15 MB downloaded).
# Load it in the VM after vivid (which brings videodev):
#   insmod "$(Tests/vm/v4l2loopback.sh)" video_nr=20 exclusive_caps=1
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "v4l2loopback.sh: $*" >&2; exit 1; }

eval "$("$HERE/prepare.sh" --print-env)"
KDIR=$(dirname "$KERNEL")
# v4l2loopback-stamped: built with the patch below (a new folder, so no unpatched build is reused).
OUT=$KDIR/v4l2loopback-stamped/v4l2loopback.ko
if [[ -s $OUT ]]; then echo "$OUT"; exit 0; fi
for tool in gcc make dpkg-deb apt-get; do
    command -v "$tool" >/dev/null || die "needs $tool (scripts/setup.sh --test installs it)"
done

mkdir -p "$(dirname "$OUT")"
exec 8>"$(dirname "$OUT")/.lock"
flock 8
if [[ -s $OUT ]]; then echo "$OUT"; exit 0; fi
work=$(mktemp -d "$(dirname "$OUT")/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$(dirname "$OUT")/build.log
fetch() { (cd "$work" && apt-get -qq -o APT::Sandbox::User=root download "$@") >>"$log" 2>&1 ||
    die "apt-get download $* failed; see $log"; }
: >"$log"
fetch "linux-headers-$KVER"
# The headers package names the -common and kbuild packages it was built with.
depends=$(dpkg-deb -f "$work"/linux-headers-"$KVER"_*.deb Depends)
common=$(grep -o 'linux-headers-[^ ,]*-common' <<<"$depends" | head -1)
kbuild=$(grep -o 'linux-kbuild-[0-9.]*' <<<"$depends" | head -1)
[[ -n $common && -n $kbuild ]] || die "cannot read the dependencies of linux-headers-$KVER: $depends"
fetch "$common" "$kbuild" v4l2loopback-dkms
for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/root"; done
headers=$work/root/usr/src/linux-headers-$KVER
src=$(ls -d "$work"/root/usr/src/v4l2loopback-* | head -1)
# The headers' Makefile includes the -common tree by its installed path; point it here.
sed -i "s|include /usr/src/|include $work/root/usr/src/|" "$headers/Makefile"
# 0.12.7 stamps each frame with CLOCK_MONOTONIC as it is written but never says so in the buffer's
# flags (V4L2_BUF_FLAG_TIMESTAMP_UNKNOWN), so a recorder must ignore the stamp. Say so, as uvcvideo
# and vivid do: then the writer's logged write times are an outside truth for a recorder's frame times.
sed -i 's|^\(\s*\)b->timestamp.tv_usec = (ts.tv_nsec / NSEC_PER_USEC);|&\n\1b->flags = (b->flags \& ~V4L2_BUF_FLAG_TIMESTAMP_MASK) \| V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC;|' \
    "$src/v4l2loopback.c"
grep -q 'V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC' "$src/v4l2loopback.c" || die "could not mark v4l2loopback's timestamps monotonic"
make -C "$headers" M="$src" modules >>"$log" 2>&1 || die "building v4l2loopback failed; see $log"
cp "$src/v4l2loopback.ko" "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$OUT"
