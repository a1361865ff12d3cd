#!/bin/bash
# scripts/check-package.sh [DEB]: installs camrec's package in a clean Debian 12 root and checks it there.
#
# The root is made by debootstrap (minbase) from Debian's archive, as root, in a directory of its own
# (the first run caches its packages under /var/cache/camrec-check). In it: `apt install ./camrec_*.deb`
# pulls the dependencies; the binary needs no Swift toolchain; `camrec --test-pattern --frames 200`
# records a file that `camrec inspect` and the root's own ffprobe accept; `man camrec` shows the page;
# the bash completion offers the options; lintian (on the host) reports no error. Then `apt remove`
# and `dpkg --purge` take every file the package brought and leave the user's recordings.
# DEB defaults to the newest dist/camrec_*.deb (scripts/package.sh). Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
deb=${1:-$(ls -t dist/camrec_*.deb 2>/dev/null | head -1)}
[[ -f $deb ]] || { echo "check-package.sh: no package (run scripts/package.sh first, or name one)" >&2; exit 66; }
[[ $(id -u) == 0 ]] || { echo "check-package.sh: debootstrap and chroot need root" >&2; exit 77; }
for tool in debootstrap lintian; do
    command -v "$tool" >/dev/null || { echo "check-package.sh: $tool is missing; run scripts/setup.sh --package as root" >&2; exit 69; }
done

pass=0 fail=0
check() {
    local what=$1; shift
    if "$@"; then echo "PASS: $what"; pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}

root=$(mktemp -d /tmp/camrec-debian12.XXXXXX)
mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null; done
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT
cache=/var/cache/camrec-check
mkdir -p "$cache"
echo "== debootstrap bookworm (minbase) into $root"
if ! debootstrap --variant=minbase --cache-dir="$cache" bookworm "$root" http://deb.debian.org/debian >"$root.log" 2>&1; then
    tail -5 "$root.log"; echo "check-package.sh: debootstrap failed" >&2; exit 70
fi
rm -f "$root.log"
for m in proc dev dev/pts; do
    mount --bind "/$m" "$root/$m" && mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=xterm "$@"; }

cp "$deb" "$root/tmp/"
name=$(basename "$deb")
in_root apt-get update -qq >/dev/null
check "apt install ./$name pulls its dependencies and installs it" \
    in_root sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/$name >/tmp/apt.log 2>&1"
in_root dpkg -L camrec >"$root/tmp/package-files.txt" 2>/dev/null
no_swift_runtime() {
    local out
    out=$(in_root ldd /usr/bin/camrec) && ! grep -qE 'libswift|libFoundation|lib_Foundation|libdispatch|not found' <<<"$out"
}
check "the binary needs no Swift toolchain (ldd shows no libswift*, libFoundation, libdispatch, nothing not found)" no_swift_runtime
in_root camrec --version | sed 's/^/   /'
check "camrec --test-pattern --frames 200 records in the clean root (exit 0)" \
    in_root sh -c 'cd /root && camrec --test-pattern --frames 200 out.h264 2>/tmp/rec.log'
check "camrec inspect: the stream contract is OK, 200 frames" \
    in_root sh -c 'camrec inspect --summary /root/out.h264 | grep -q "^stream contract: OK" && camrec inspect --summary /root/out.h264 | grep -q ", 200 frames$"'
# libx265 and libav* are opened on first use, not linked: only the package's Depends bring them.
check "camrec records H.265 (libx265) and MP4 (libavformat) in the clean root, before anything else is installed" \
    in_root sh -c 'cd /root && camrec --test-pattern --frames 30 out.h265 2>/tmp/rec265.log && camrec --test-pattern --frames 30 out.mp4 2>/tmp/recmp4.log && camrec inspect --summary out.h265 | grep -q "^stream contract: OK"'
in_root sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg man-db bash-completion >/tmp/apt2.log 2>&1"
decoded_in_root() { in_root ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1"; }
check "the root's own ffprobe decodes 200 frames" test "$(decoded_in_root /root/out.h264)" = 200
check "the root's own ffprobe decodes 30 frames of the H.265 file and 30 of the MP4" \
    test "$(decoded_in_root /root/out.h265) $(decoded_in_root /root/out.mp4)" = "30 30"
check "man camrec shows the page, man camrec-receive its subcommand's, and whatis knows both" \
    in_root sh -c 'man -P cat camrec 2>/dev/null | grep -q "camrec" && man -P cat camrec-receive 2>/dev/null | grep -q "camrec receive" &&
        mandb -q 2>/dev/null; whatis camrec-receive 2>/dev/null | grep -q "^camrec-receive"'
# What bash does on TAB: the completion function the package installs, called as bash-completion calls it.
# swift-argument-parser's script offers the default subcommand's options only after its name
# (`camrec record --dev`), not after a bare `camrec`.
completes() {   # completes LINE WORD: what TAB offers at the end of LINE includes WORD
    in_root bash -c 'source /usr/share/bash-completion/bash_completion; source /usr/share/bash-completion/completions/camrec
        COMP_LINE=$1; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<<"$COMP_LINE"; COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _camrec camrec "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}" | grep -qx -- "$2"' completes "$1" "$2"
}
completions_work() { completes 'camrec re' record && completes 'camrec re' receive && completes 'camrec record --dev' --device; }
check "bash completion: camrec re<TAB> offers record and receive, camrec record --dev<TAB> offers --device" completions_work
# And as a user meets it: an interactive login bash in tmux (bash-completion loads from /etc/profile.d
# and loads camrec's script on the first TAB), the keys typed, the screen read back.
tab_in_tmux() {
    local screen
    in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tmux >/dev/null 2>&1' || return 1
    in_root tmux -L check new-session -d -x 120 -y 10 "bash -l -i" || return 1
    sleep 1
    in_root tmux -L check send-keys "camrec record --dev" Tab
    sleep 2
    screen=$(in_root tmux -L check capture-pane -p)
    in_root tmux -L check kill-server
    echo "   tmux: $(grep camrec <<<"$screen" | tail -1)"
    grep -q "camrec record --device" <<<"$screen"
}
check "in tmux, an interactive bash completes camrec record --dev<TAB> to --device" tab_in_tmux
check "udev rule and systemd unit in place, naming /usr/bin/camrec; nothing enabled" \
    sh -c "test -f '$root/lib/udev/rules.d/70-camrec.rules' && grep -q '^ExecStart=/usr/bin/camrec' '$root/lib/systemd/system/camrec@.service' &&
           ! ls '$root'/etc/systemd/system/*.wants/camrec* >/dev/null 2>&1"
lintian --tag-display-limit 0 "$deb" >"$root/tmp/lintian.txt" 2>&1
sed 's/^/   lintian: /' "$root/tmp/lintian.txt"
check "lintian reports no error" sh -c "! grep -q '^E:' '$root/tmp/lintian.txt'"

# A recording a user made where the unit records, and one elsewhere: neither is the package's.
mkdir -p "$root/var/lib/camrec/video0"
cp "$root/root/out.h264" "$root/var/lib/camrec/video0/kept.h264"
check "apt remove camrec succeeds" in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq camrec >/dev/null 2>&1'
check "after remove the binary, man page, unit and rule are gone" \
    sh -c "test ! -e '$root/usr/bin/camrec' -a ! -e '$root/lib/systemd/system/camrec@.service' -a ! -e '$root/lib/udev/rules.d/70-camrec.rules'"
check "dpkg --purge camrec succeeds" in_root dpkg --purge camrec
left=$(while read -r f; do [[ -f $root$f ]] && echo "$f"; done <"$root/tmp/package-files.txt")   # files: /lib is a link here
check "after purge no file of the package is left (${left:-none})" test -z "$left"
check "the user's recordings are untouched (/var/lib/camrec/video0/kept.h264, /root/out.h264)" \
    sh -c "cmp -s '$root/root/out.h264' '$root/var/lib/camrec/video0/kept.h264'"
echo "$pass passed, $fail failed"
((fail == 0))
