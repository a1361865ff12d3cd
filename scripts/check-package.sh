#!/bin/bash
# scripts/check-package.sh [DEB]: installs camrec's package in a clean Debian 12 root and checks it there.
#
# The root is made by debootstrap (minbase, with systemd-sysv and udev) from Debian's archive, as root, in a
# directory of its own (the first run caches its packages under /var/cache/camrec-check), and booted with
# its own systemd as PID 1 (systemd-nspawn --boot), so the maintainer scripts run as on a real system. In
# it: `apt install ./camrec_*.deb` pulls the dependencies; the binary needs no Swift toolchain;
# `camrec --test-pattern --frames 200` records a file that `camrec inspect` and the root's own ffprobe
# accept; `man camrec` shows the page and `man -k camrec` lists every page, each description unquoted; the
# bash completion offers the options; the package's camrec@video0.service (the test pattern in place of the
# camera) runs and its file grows; lintian (on the host) exits 0. Then `apt remove` stops that recording
# (its file ends whole) and takes the binary, the unit, the rule and the man pages dpkg -L listed, and
# `dpkg --purge` takes every file the package brought and leaves the user's recordings. 4-8 minutes
# with the archive reachable (debootstrap most of it); needs systemd-nspawn (systemd-container), debootstrap, lintian.
# DEB defaults to the newest dist/camrec_*.deb (scripts/package.sh). Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
deb=${1:-$(ls -t dist/camrec_*.deb 2>/dev/null | head -1)}
[[ -f $deb ]] || { echo "check-package.sh: no package (run scripts/package.sh first, or name one)" >&2; exit 66; }
[[ $(id -u) == 0 ]] || { echo "check-package.sh: debootstrap and systemd-nspawn need root" >&2; exit 77; }
for tool in debootstrap lintian systemd-nspawn nsenter; do
    command -v "$tool" >/dev/null || { echo "check-package.sh: $tool is missing; run scripts/setup.sh --package as root" >&2; exit 69; }
done

pass=0 fail=0
check() {
    local what=$1; shift
    if "$@"; then echo "PASS: $what"; pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}

root=$(mktemp -d /tmp/camrec-debian12.XXXXXX)
nspawn=
cleanup() {
    if [[ -n $nspawn ]] && kill -0 "$nspawn" 2>/dev/null; then
        kill -TERM "$nspawn"   # systemd-nspawn asks the container's systemd to power off
        for _ in $(seq 100); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$nspawn" 2>/dev/null
    fi
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT
cache=/var/cache/camrec-check
mkdir -p "$cache"
# systemd-sysv: the root boots with systemd as PID 1, so the maintainer scripts meet a running systemd
# (prerm's stop, the reloads). udev: on every Debian system (priority important); its postinst makes
# the render group the unit's SupplementaryGroups= names (without it the unit fails with 216/GROUP).
echo "== debootstrap bookworm (minbase, systemd-sysv, udev) into $root"
if ! debootstrap --variant=minbase --include=systemd-sysv,udev --cache-dir="$cache" bookworm "$root" http://deb.debian.org/debian >"$root.log" 2>&1; then
    tail -5 "$root.log"; echo "check-package.sh: debootstrap failed" >&2; exit 70
fi
rm -f "$root.log"

# Booted, not chrooted: systemd-nspawn --boot runs the root's own systemd as PID 1 in a container (the
# host's network; no registration with a machined the host may not run), and every command below
# enters the container's namespaces with nsenter, as a shell in it would run.
echo "== systemd-nspawn --boot"
systemd-nspawn --boot --directory="$root" --machine="camrec-check-$$" --register=no --keep-unit --console=read-only \
    >"$root.boot.log" 2>&1 &
nspawn=$!
leader=
for _ in $(seq 300); do   # the container's PID 1, a grandchild of systemd-nspawn, once it has become systemd
    for pid in $(pgrep -P "$nspawn") $(pgrep -P "$(pgrep -P "$nspawn" | head -1)" 2>/dev/null); do
        grep -qE '^NSpid:.*[[:space:]]1$' "/proc/$pid/status" 2>/dev/null &&
            [[ $(cat "/proc/$pid/comm" 2>/dev/null) == systemd ]] && leader=$pid
    done
    [[ -n $leader ]] && break
    sleep 0.1
done
[[ -n $leader ]] || { grep -vE 'System call|Failed to add rule' "$root.boot.log" | tail -5; echo "check-package.sh: systemd-nspawn did not start" >&2; exit 70; }
in_root() { nsenter --target "$leader" --all /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=xterm "$@"; }
booted() {
    local state
    for _ in $(seq 100); do   # until systemd has made /run/systemd/system and answers, then until it has booted
        state=$(timeout 120 nsenter --target "$leader" --all systemctl is-system-running --wait 2>/dev/null)
        [[ -n $state && $state != offline ]] && break
        sleep 0.2
    done
    echo "   the container's PID 1: $(cat "/proc/$leader/comm"), systemctl is-system-running: $state"
    [[ $state == running ]] || in_root systemctl --failed --no-pager | sed 's/^/   /'
    [[ $state == running && $(cat "/proc/$leader/comm") == systemd ]]
}
check "the root booted with systemd as PID 1 (systemctl is-system-running: running)" booted
rm -f "$root.boot.log"

cp "$deb" "$root/var/tmp/"
name=$(basename "$deb")
in_root sh -c "apt-get update -qq >/var/tmp/apt-update.log 2>&1"
check "apt install ./$name pulls its dependencies and installs it" \
    in_root sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /var/tmp/$name >/var/tmp/apt.log 2>&1"
in_root dpkg -L camrec >"$root/var/tmp/package-files.txt" 2>/dev/null
no_swift_runtime() {
    local out
    out=$(in_root ldd /usr/bin/camrec) && ! grep -qE 'libswift|libFoundation|lib_Foundation|libdispatch|not found' <<<"$out"
}
check "the binary needs no Swift toolchain (ldd shows no libswift*, libFoundation, libdispatch, nothing not found)" no_swift_runtime
in_root camrec --version | sed 's/^/   /'
check "camrec --test-pattern --frames 200 records in the clean root (exit 0)" \
    in_root sh -c 'cd /root && camrec --test-pattern --frames 200 out.h264 2>/var/tmp/rec.log'
check "camrec inspect: the stream contract is OK, 200 frames" \
    in_root sh -c 'camrec inspect --summary /root/out.h264 | grep -q "^stream contract: OK" && camrec inspect --summary /root/out.h264 | grep -q ", 200 frames$"'
# libx265 and libav* are opened on first use, not linked: only the package's Depends bring them.
check "camrec records H.265 (libx265) and MP4 (libavformat) in the clean root, before anything else is installed" \
    in_root sh -c 'cd /root && camrec --test-pattern --frames 30 out.h265 2>/var/tmp/rec265.log && camrec --test-pattern --frames 30 out.mp4 2>/var/tmp/recmp4.log && camrec inspect --summary out.h265 | grep -q "^stream contract: OK"'
in_root sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg man-db bash-completion >/var/tmp/apt2.log 2>&1"
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
# The package's unit, started as udev's rule would start it for /dev/video0. A container has no device
# units (its /sys is read-only), so the unit's Requires=dev-video0.device can never be met here: a drop-in
# swaps only the camera for the test pattern in the unit's own ExecStart, and the start ignores the
# device requirement alone (--job-mode=ignore-requirements).
unit=camrec@video0.service
execstart=$(sed -n '/^ExecStart=/,/[^\\]$/p' "$root/lib/systemd/system/camrec@.service" | sed 's/\\$//' | tr -s ' \n' ' ')
test_pattern=${execstart/--device \/dev\/%I --on-camera-lost wait/--test-pattern --size 320x240}
[[ $test_pattern != "$execstart" ]] || { echo "check-package.sh: no --device /dev/%I --on-camera-lost wait in the unit's ExecStart: $execstart" >&2; exit 70; }
mkdir -p "$root/etc/systemd/system/$unit.d"
printf '[Service]\nExecStart=\n%s\n' "$test_pattern" >"$root/etc/systemd/system/$unit.d/test-pattern.conf"
in_root systemctl daemon-reload
in_root systemctl start --job-mode=ignore-requirements "$unit"
unit_pid=$(in_root systemctl show -P MainPID "$unit")
unit_runs() {
    local state fragment comm
    state=$(in_root systemctl is-active "$unit")
    fragment=$(in_root systemctl show -P FragmentPath "$unit")
    comm=$(in_root cat "/proc/$unit_pid/comm" 2>/dev/null)
    echo "   $unit: $state, $fragment, main PID $unit_pid ($comm)"
    [[ $state == active && $fragment == /lib/systemd/system/camrec@.service && $unit_pid != 0 && $comm == camrec ]]
}
check "$unit runs from the package's unit file (systemctl is-active: active, its main PID a camrec)" unit_runs
partial_grows() {
    local partial size1 size2
    for _ in $(seq 100); do
        partial=$(find "$root/var/lib/camrec/video0" -name '*.partial' 2>/dev/null | head -1)
        [[ -n $partial ]] && break
        sleep 0.2
    done
    [[ -n $partial ]] || return 1
    size1=$(stat -c %s "$partial"); sleep 2; size2=$(stat -c %s "$partial")
    echo "   ${partial#"$root"}: $size1 bytes, 2 s later $size2"
    ((size2 > size1))
}
check "its recording's .partial file grows (in /var/lib/camrec/video0)" partial_grows

lintian --tag-display-limit 0 "$deb" >"$root/var/tmp/lintian.txt" 2>&1
lintian_status=$?
sed 's/^/   lintian: /' "$root/var/tmp/lintian.txt"
check "lintian exits 0 (no error; its warnings are above)" test "$lintian_status" = 0

# The pages the package installed, as dpkg lists them, for the checks after removal.
man_pages=$(grep '^/usr/share/man/.*\.gz$' "$root/var/tmp/package-files.txt")
man_count=$(wc -l <<<"$man_pages")
apropos_lists_each_page() {   # man -k: NAME (1) - description, the description as the page's .Nd says it
    local listed
    in_root mandb -q 2>/dev/null
    listed=$(in_root man -k camrec 2>/dev/null)
    sed 's/^/   man -k: /' <<<"$listed"
    [[ $(grep -c '^camrec' <<<"$listed") == "$man_count" ]] && ! grep -qE ' - +"' <<<"$listed"
}
check "man -k camrec lists the $man_count pages dpkg -L names, no description starting with a quote" apropos_lists_each_page

# A recording a user made where the unit records, and one elsewhere: neither is the package's.
mkdir -p "$root/var/lib/camrec/video0"
cp "$root/root/out.h264" "$root/var/lib/camrec/video0/kept.h264"
check "apt remove camrec succeeds" in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq camrec >/dev/null 2>&1'
unit_stopped() {
    local state
    state=$(in_root systemctl is-active "$unit")
    echo "   $unit after apt remove: $state; main PID $unit_pid $(in_root test -d "/proc/$unit_pid" && echo running || echo gone)"
    [[ $state != active && $state != deactivating ]] && ! in_root test -d "/proc/$unit_pid"
}
check "apt remove stopped $unit (not active, its main PID gone)" unit_stopped
# SIGTERM lets camrec finish the file: the one the unit recorded is whole (>= 2 s at 30 fps: it ran
# longer than the growth check above), and no .partial is left.
recording_whole() {
    local files frames errors
    files=$(find "$root/var/lib/camrec/video0" -name 'video0-*.h264' ! -name '*.partial')
    [[ $(wc -w <<<"$files") == 1 ]] || { echo "   recordings of the unit: ${files:-none}"; return 1; }
    find "$root/var/lib/camrec/video0" -name '*.partial' | grep -q . && { echo "   a .partial is left"; return 1; }
    frames=$(decoded_in_root "${files#"$root"}")
    errors=$(in_root ffmpeg -nostdin -v error -i "${files#"$root"}" -f null - 2>&1)
    echo "   ${files#"$root"}: $frames frames decoded${errors:+; ffmpeg: $errors}"
    [[ -z $errors ]] && ((frames >= 60))
}
check "its recording ends whole: no .partial left, the root's ffmpeg decodes the file with no error, >= 60 frames" recording_whole
check "after remove the binary, unit and rule are gone" \
    sh -c "test ! -e '$root/usr/bin/camrec' -a ! -e '$root/lib/systemd/system/camrec@.service' -a ! -e '$root/lib/udev/rules.d/70-camrec.rules'"
pages_gone() {
    local page left=
    for page in $man_pages; do [[ -e $root$page ]] && left+=" $page"; done
    [[ -z $left ]] || echo "   left:$left"
    [[ -z $left ]] && ! in_root man -w camrec >/dev/null 2>&1
}
check "after remove the $man_count man pages dpkg -L listed are gone, and man -w camrec finds none" pages_gone
check "dpkg --purge camrec succeeds" in_root dpkg --purge camrec
left=$(while read -r f; do [[ -f $root$f ]] && echo "$f"; done <"$root/var/tmp/package-files.txt")   # files: /lib is a link here
check "after purge no file of the package is left (${left:-none})" test -z "$left"
check "the user's recordings are untouched (/var/lib/camrec/video0/kept.h264, /root/out.h264)" \
    sh -c "cmp -s '$root/root/out.h264' '$root/var/lib/camrec/video0/kept.h264'"
echo "$pass passed, $fail failed"
((fail == 0))
