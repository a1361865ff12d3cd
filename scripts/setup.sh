#!/usr/bin/env bash
# Installs what camrec needs on Debian 12, as root; installs nothing already there.
#   scripts/setup.sh          build and run dependencies
#   scripts/setup.sh --test   also what the tests need (ffmpeg tools, qemu for the vivid VM, alsa-utils (amixer,
#                             arecord) for its loopback sound card, Xvfb, libva,
#                             nginx-rtmp and srt-live-transmit as media servers to publish to, GStreamer's
#                             rtspsrc and live555 (built from PyPI's liblivemedia source) as clients of --rtsp, headless
#                             Chromium with Selenium from PyPI to play recordings in a browser, and
#                             prometheus-client from PyPI, whose parser reads /metrics)
#   scripts/setup.sh --package  also what scripts/package.sh and scripts/check-package.sh need (dpkg-dev,
#                             binutils, debootstrap for a clean Debian 12 root, systemd-container to boot it, lintian)
set -euo pipefail

packages=(pkg-config libavcodec-dev libavformat-dev libavutil-dev libswresample-dev libasound2-dev libv4l-dev libva-dev libyuv-dev libjpeg62-turbo-dev libx264-dev libx265-dev)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(ffmpeg v4l-utils alsa-utils qemu-system-x86 busybox-static kmod cpio xvfb vainfo udev gcc make python3 tmux systemd
            nginx libnginx-mod-rtmp srt-tools curl chromium chromium-driver
            gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-nice g++
            python3-gi gir1.2-gst-plugins-bad-1.0)
fi
if [[ "${1:-}" == "--package" ]]; then
  packages+=(dpkg-dev binutils debootstrap lintian systemd-container python3)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: these Debian packages are missing: ${missing[*]}; run this script as root (sudo $0 $*)" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # nginx is only a server the tests start on loopback themselves: keep its package from starting
  # (or failing to start) a system-wide nginx on port 80 while it installs.
  no_start=
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && no_start=1
  fi
  status=0
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || status=$?
  [[ -n $no_start ]] && rm -f /usr/sbin/policy-rc.d
  ((status == 0)) || exit "$status"
fi

# From PyPI for whichever python3 the tests run: Selenium drives Chromium, prometheus-client parses /metrics.
if [[ "${1:-}" == "--test" ]]; then
  for module in "selenium selenium>=4.20,<5" "prometheus_client prometheus-client>=0.16,<1"; do
    read -r name requirement <<<"$module"
    python3 -c "import $name" 2>/dev/null && continue
    echo "setup: installing $requirement (PyPI) for python3" >&2
    python3 -m pip install -q --disable-pip-version-check "$requirement" 2>&1 | grep -v "Running pip as the 'root' user" >&2 || true
    python3 -c "import $name" || { echo "setup: $requirement did not install for $(command -v python3)" >&2; exit 1; }
  done
fi

# live555, the RTSP client library of VLC's live555 module and of openRTSP, for Tests/tools/live555-client.cpp:
# Debian 12 packages neither (its VLC is built without live555), so it is built once from the live555 2024.06.26
# sources that PyPI's liblivemedia sdist carries, into a static library and its headers.
LIVE555=/usr/local/lib/camrec-tests/live555
if [[ "${1:-}" == "--test" && ! -e $LIVE555/liblive555.a ]]; then
  echo "setup: building live555 (PyPI liblivemedia 1.0.5 source) into $LIVE555" >&2
  src=$(mktemp -d)
  python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: -d "$src" "liblivemedia==1.0.5" 2>&1 \
    | grep -v "Running pip as the 'root' user" >&2 || true
  tar xzf "$src/liblivemedia-1.0.5.tar.gz" -C "$src"
  live="$src/liblivemedia-1.0.5"
  mkdir -p "$LIVE555/include" "$src/obj"
  find "$live"/{UsageEnvironment,BasicUsageEnvironment,groupsock,liveMedia}/include -name '*.h*' -exec cp {} "$LIVE555/include/" \;
  find "$live"/{UsageEnvironment,BasicUsageEnvironment,groupsock,liveMedia} -maxdepth 1 -name '*.c' -o -maxdepth 1 -name '*.cpp' \
    | xargs -P "$(nproc)" -I{} sh -c 'case {} in *.c) cc=gcc std=;; *) cc=g++ std=-std=c++20;; esac
        $cc $std -O1 -w -DSOCKLEN_T=socklen_t -DNO_OPENSSL=1 -I"$1" -c {} -o "$2/$(echo {} | tr / _).o" || exit 255' _ "$LIVE555/include" "$src/obj"
  ar rcs "$LIVE555/liblive555.a.tmp" "$src"/obj/*.o && mv "$LIVE555/liblive555.a.tmp" "$LIVE555/liblive555.a"
  rm -rf "$src"
fi

if ! command -v swift >/dev/null 2>&1; then
  if [[ -x /opt/swift/usr/bin/swift ]]; then
    echo "setup: swift is at /opt/swift/usr/bin; add it to PATH" >&2
  else
    echo "setup: no Swift toolchain found; install Swift 6 for Linux first (swift.org), then run this again" >&2
  fi
  exit 1
fi
