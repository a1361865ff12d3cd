#!/bin/bash
# Tests/suites/vm-unattended.sh — cron, systemd's ExecStart, udev rules, --wait and a full disk,
# with camrec recording from vivid in the test VM (Tests/vm-cases/unattended-cases.sh, one boot).
# Ends with the cases' "N passed, N failed" line; a VM that fails to run counts as one failure.
set -uo pipefail
source "$(dirname "$0")/../lib/vm-suite.sh"
vm_suite_start vm-unattended
# The kernel's log holds its DQBUF log of each recording (Tests/vm-cases/device-log.sh): 16 MiB, not 128 KiB.
export CAMREC_VM_APPEND="${CAMREC_VM_APPEND:-} log_buf_len=16M"
# The unit files are checked by systemd itself first (on the host; nothing is installed).
units=$(mktemp -d)
cp systemd/camrec@.service "$units/camrec@video0.service"
cp systemd/camrec-morning.service systemd/camrec-morning.timer "$units/"
verify_ok=1
for u in "$units"/*; do
    if ! out=$(systemd-analyze verify "$u" 2>&1 | grep -v -e 'not executable' -e 'No such file' -e 'dev-video0.device' -e '^$'); then :; fi
    if [[ -n $out ]]; then echo "systemd-analyze verify $(basename "$u"): $out"; verify_ok=0; fi
done
rm -rf "$units"
# Two emulated CPUs: these cases start camrec processes beside a recording (an overlapping cron run,
# --wait), and on one emulated CPU their start-up (dynamic linking of libavcodec, libva and x264 under
# TCG) starved the recording: 18 of 81 frames dropped in the --wait case. A real machine has more
# than one core; the dropped-frame checks stay exact.
vm_suite_run unattended-cases.sh --cpus 2
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$VM_LOG" | tail -1)
if [[ -z $line ]]; then echo "vm-unattended: the VM run ended without a result (exit $VM_RC)"; line="0 passed, 1 failed"; fi
p=$(cut -d' ' -f1 <<<"$line"); f=$(cut -d' ' -f3 <<<"$line")
if [[ $verify_ok == 1 ]]; then p=$((p + 1)); echo "PASS: systemd-analyze verify accepts the unit files"
else f=$((f + 1)); echo "FAIL: systemd-analyze verify"; fi
echo "$p passed, $f failed"
# Like the other VM suites, the VM's own exit status counts too (a crashed or timed-out VM is 125).
[[ $f == 0 && $VM_RC == 0 ]]
