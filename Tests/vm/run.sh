#!/bin/bash
# Tests/vm/run.sh — run one command as root in a throwaway qemu VM that has vivid (V4L2) and
# vgem (DRM) devices and sees this machine's whole file system read-only. See Tests/vm/README.md.
#
# usage: Tests/vm/run.sh [options] -- COMMAND [ARGS...]
#   --vivid 'PARAMS'    vivid module parameters, e.g. 'n_devs=2 node_types=0x1,0x1' (default: none)
#   --env NAME=VALUE    set NAME in the command's environment (repeatable); --env NAME copies
#                       NAME's value from run.sh's environment
#   --results DIR       host directory shared writable with the VM, at the same path inside
#                       (default: a new mktemp -d dir, printed on stderr); env CAMREC_VM_RESULTS
#   --timeout SECONDS   kill the VM after this long (default 600)
#   --mem SIZE          guest memory (default 2G)      --cpus N   vCPUs (default 1; see README)
#   --forward HPORT:GPORT  a NIC on qemu's restricted user network, with the host's loopback
#                       TCP port HPORT forwarded to the VM's GPORT (the VM reaches nothing else);
#                       repeatable (one NIC, a port each)
#   --forward-udp [HADDR:]HPORT:GPORT  the same for UDP: datagrams to the host's HADDR:HPORT
#                       (default 127.0.0.1) reach the VM's GPORT, and its replies go back to their sender;
#                       the NIC is then unrestricted (qemu's restricted one drops every datagram sent)
#   --guest-forward GPORT:HPORT  on that NIC, the VM's connections to 10.0.2.100:GPORT relayed to
#                       the host's 127.0.0.1:HPORT (Tests/tools/tcp-relay.py); needs a --forward
#   --console           copy the VM's serial console to stderr afterwards (debugging)
#   --keep              keep the control dir (console.log, init.log, cmd.sh) and print its path
# The command's stdout/stderr come out on run.sh's stdout/stderr after the VM stops.
# Exit status: the command's own, or 125 if the VM failed (no boot, kernel panic, timeout,
# setup error), or 2 for bad usage.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me=run.sh
usage() { sed -n '5,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "$me: $*" >&2; exit 125; }

VIVID= RESULTS= TIMEOUT=600 MEM=2G CPUS=1 CONSOLE=0 KEEP=0 UDP_FORWARDED=0
FORWARDS=()
GUEST_FORWARDS=()
ENVS=()
while (($#)); do
    case $1 in
        --vivid) VIVID=${2?}; shift 2 ;;
        --vivid=*) VIVID=${1#*=}; shift ;;
        --env)
            [[ $# -ge 2 ]] || usage
            if [[ $2 == *=* ]]; then ENVS+=("$2")
            elif [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*$ && -n ${!2+set} ]]; then ENVS+=("$2=${!2}")
            elif [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then :   # unset: pass nothing
            else echo "$me: bad --env $2" >&2; exit 2; fi
            shift 2 ;;
        --results) RESULTS=${2?}; shift 2 ;;
        --timeout) TIMEOUT=${2?}; shift 2 ;;
        --mem) MEM=${2?}; shift 2 ;;
        --cpus) CPUS=${2?}; shift 2 ;;
        --forward)
            [[ ${2:-} =~ ^[0-9]{1,5}:[0-9]{1,5}$ ]] || { echo "$me: bad --forward ${2:-}: give HOSTPORT:GUESTPORT" >&2; exit 2; }
            FORWARDS+=("hostfwd=tcp:127.0.0.1:${2%%:*}-:${2##*:}"); shift 2 ;;
        --forward-udp)
            [[ ${2:-} =~ ^(([0-9]{1,3}\.){3}[0-9]{1,3}:)?[0-9]{1,5}:[0-9]{1,5}$ ]] || { echo "$me: bad --forward-udp ${2:-}: give [HOSTADDR:]HOSTPORT:GUESTPORT" >&2; exit 2; }
            [[ $2 == *.* ]] && f=$2 || f=127.0.0.1:$2
            FORWARDS+=("hostfwd=udp:${f%:*}-:${f##*:}"); UDP_FORWARDED=1; shift 2 ;;
        --guest-forward)
            [[ ${2:-} =~ ^[0-9]{1,5}:[0-9]{1,5}$ ]] || { echo "$me: bad --guest-forward ${2:-}: give GUESTPORT:HOSTPORT" >&2; exit 2; }
            # restrict=on leaves explicit forwarding rules working; cmd: starts the relay per connection.
            GUEST_FORWARDS+=("guestfwd=tcp:10.0.2.100:${2%%:*}-cmd:/usr/bin/python3 $HERE/../tools/tcp-relay.py stdio 127.0.0.1 ${2##*:}"); shift 2 ;;
        --console) CONSOLE=1; shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) usage ;;
        --) shift; break ;;
        -*) echo "$me: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
(($#)) || usage
[[ $TIMEOUT =~ ^[0-9]+$ ]] || { echo "$me: bad --timeout $TIMEOUT" >&2; exit 2; }
for e in "${ENVS[@]}"; do
    [[ ${e%%=*} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "$me: bad --env $e" >&2; exit 2; }
done

T0=$(date +%s.%N)
vmenv=$("$HERE/prepare.sh" --print-env) || die "prepare.sh failed"
Tp=$(date +%s.%N)
eval "$vmenv"    # KVER KERNEL INITRD

if [[ -z $RESULTS ]]; then
    RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/camrec-vm-results.XXXXXX")
    echo "$me: results in $RESULTS" >&2
fi
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd -P)
[[ $RESULTS != *$'\n'* ]] || die "results path has a newline"
CWD=$(pwd -P)

CTL=$(mktemp -d "${TMPDIR:-/tmp}/camrec-vm-ctl.XXXXXX")
qpid= hpid=
cleanup() {
    [[ -n $qpid ]] && kill "$qpid" 2>/dev/null
    [[ -n $hpid ]] && kill "$hpid" 2>/dev/null
    if ((KEEP)); then echo "$me: control dir kept: $CTL" >&2; else rm -rf "$CTL"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

printf '%s\n' "$VIVID" >"$CTL/vivid_params"
printf '%s\n' "$RESULTS" >"$CTL/results_path"

# The command runs under the host's bash in the chroot. PATH: the caller's, plus the sbin dirs.
path=$PATH
for d in /usr/local/sbin /usr/sbin /sbin; do [[ :$path: == *:$d:* ]] || path=$path:$d; done
{
    echo '# generated by Tests/vm/run.sh'
    printf 'cd -- %q || { echo "run.sh: cwd %s does not exist in the VM" >&2; exit 125; }\n' "$CWD" "$CWD"
    printf 'exec env -i'
    printf ' %q' "PATH=$path" HOME=/tmp LANG=C.UTF-8 TERM=dumb USER=root LOGNAME=root SHELL=/bin/bash \
        TMPDIR=/tmp CAMREC_VM=1 "CAMREC_VM_RESULTS=$RESULTS" "CAMREC_VM_KERNEL=$KVER" "${ENVS[@]}"
    # env stops reading NAME=VALUE at the first word without '='; make sure the command is one.
    [[ $1 == *=* ]] && printf ' /usr/bin/env'
    printf ' %q' "$@"
    echo
} >"$CTL/cmd.sh"

# -accel tcg: KVM hangs on this kind of machine. -cpu max: lets the guest use AVX2 etc. (x264's
# SIMD paths). debug-threads: the vCPU threads are named ("CPU 0/TCG"), for Tests/tools/vcpu-wait.py.
# No display, no NIC (but with --forward); the serial console goes to a file, never to our stdout.
# loglevel=3: only errors and worse reach that file (a crash's backtrace, for the report below).
qemu=(qemu-system-x86_64 -name camrec-vm,debug-threads=on -accel tcg -cpu max -smp "$CPUS" -m "$MEM"
    -nodefaults -no-user-config -display none -no-reboot -monitor none
    -serial "file:$CTL/console.log"
    -kernel "$KERNEL" -initrd "$INITRD"
    -append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init ${CAMREC_VM_APPEND:-}"
    -virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$RESULTS,mount_tag=results,security_model=none,multidevs=remap"
    -virtfs "local,path=$CTL,mount_tag=ctl,security_model=none,multidevs=remap")
if ((${#FORWARDS[@]})); then
    # qemu's restricted network drops every datagram the VM sends, replies on a forwarded port too: with
    # UDP forwarded, it is unrestricted (the VM can then reach what this host reaches).
    nic="user,model=virtio-net-pci,restrict=$( ((UDP_FORWARDED)) && echo off || echo on)"
    for f in "${FORWARDS[@]}" "${GUEST_FORWARDS[@]}"; do nic+=",$f"; done
    qemu+=(-nic "$nic")
fi

# The cases' analysis tools (ffprobe, ffmpeg, Tests/tools/*.py on finished files) run here, not
# under emulation, where each start costs seconds: Tests/vm/host-tools.py, called through
# on_host in Tests/vm-cases/case-lib.sh over the results share.
ON_HOST="$RESULTS/.on-host"
rm -rf "$ON_HOST"
# A bare python3 in a request is the one the tests run (with Selenium), as a path: its pyenv shim
# would need this HOME.
CAMREC_TEST_PYTHON=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) \
    /usr/bin/python3 "$HERE/host-tools.py" "$ON_HOST" </dev/null >"$CTL/host-tools.log" 2>&1 &
hpid=$!
set +e
timeout -k 5 "$TIMEOUT" "${qemu[@]}" </dev/null >"$CTL/qemu.log" 2>&1 &
qpid=$!
# For Tests/tools/vcpu-wait.py (through on_host): how long the host kept the VM's CPUs waiting.
echo "$qpid" >"$RESULTS/.qemu.pid"
wait "$qpid"
qrc=$?
qpid=
kill "$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null
hpid=
rm -rf "$ON_HOST" "$RESULTS/.qemu.pid"
[[ -s $CTL/host-tools.log ]] && { echo "$me: host-tools.py:"; sed 's/^/  /' "$CTL/host-tools.log"; } >&2
set -e
T1=$(date +%s.%N)

((CONSOLE)) && { echo "----- VM console -----"; cat "$CTL/console.log"; echo "----- end of console -----"; } >&2
[[ -f $CTL/stdout ]] && cat "$CTL/stdout"
[[ -f $CTL/stderr ]] && cat "$CTL/stderr" >&2

if [[ -n ${CAMREC_VM_TIMING:-} ]]; then
    # Guest uptime when the command started and ended (the guest clock starts at kernel entry).
    up0=$(awk '$1 == "start" {print $2}' "$CTL/times" 2>/dev/null) up1=$(awk '$1 == "end" {print $2}' "$CTL/times" 2>/dev/null)
    echo "$T0 $Tp $T1 ${up0:-0} ${up1:-0}" | awk -v me="$me" '{printf "%s: %.1fs in all: prepare %.1fs, qemu %.1fs (kernel boot to command %.1fs, command %.1fs)\n", me, $3 - $1, $2 - $1, $3 - $2, $4, $5 - $4}' >&2
fi

if [[ -s $CTL/rc ]]; then
    rc=$(cat "$CTL/rc")
    [[ $rc =~ ^[0-9]+$ ]] || die "bad exit status from the VM: $rc"
    exit "$rc"
fi

stage=$(cat "$CTL/stage" 2>/dev/null || echo none)
crash_re='Kernel panic|BUG:|Oops|general protection fault|sysrq: Trigger a crash'
if [[ $qrc == 124 || $qrc == 137 ]]; then
    if [[ $stage == started ]]; then
        msg="timeout: the command did not finish within ${TIMEOUT}s (VM killed)"
    else
        msg="timeout: the VM did not get to the command within ${TIMEOUT}s (stage: $stage)"
    fi
elif grep -qE "$crash_re" "$CTL/console.log" 2>/dev/null; then
    msg="kernel crash in the VM (stage: $stage)"
elif [[ $qrc != 0 ]]; then
    msg="qemu failed (exit $qrc): $(tail -3 "$CTL/qemu.log" | tr '\n' ' ')"
elif [[ $stage != started && -s $CTL/init.log ]]; then
    msg="setting up the VM failed (stage: $stage)"
else
    msg="the VM stopped without a command exit status (stage: $stage)"
fi
{
    echo "$me: $msg"
    [[ -s $CTL/init.log ]] && { echo "$me: init.log:"; sed 's/^/  /' "$CTL/init.log"; }
    if ((!CONSOLE)) && [[ -s $CTL/console.log ]]; then
        if grep -qE "$crash_re" "$CTL/console.log"; then
            echo "$me: console, from the crash on:"
            grep -m1 -A30 -E "$crash_re" "$CTL/console.log" | sed 's/^/  /'
        else
            echo "$me: last console lines:"; tail -20 "$CTL/console.log" | sed 's/^/  /'
        fi
    fi
} >&2
exit 125
