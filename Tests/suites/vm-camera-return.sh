#!/bin/bash
# Tests/suites/vm-camera-return.sh — a camera that goes away and comes back (issue 27): camrec with
# --on-camera-lost wait against vivid in the test VM, three unplugs with a TCP receiver, the live
# status and the host's Chromium on the live page watching, a time limit that runs out, and another camera that must not be taken for it
# and a v4l2loopback node whose writer stops and whose module is removed and loaded again
# (Tests/vm-cases/camera-return-cases.sh, one boot).
# Ends with the cases' "N passed, N failed" line; a VM that fails to run counts as one failure.
# Environment: see Tests/lib/vm-suite.sh (CAMREC, CAMREC_VM_RESULTS).
set -uo pipefail
source "$(dirname "$0")/../lib/vm-suite.sh"
vm_suite_start vm-camera-return
echo "vm-camera-return: camrec $CAMREC, results in $RESULTS"
# Two vivid instances: 0 is the camera that goes away, 1 another camera (multi-planar) for the impostor
# case and an unplug of its own.
ko=$(Tests/vm/v4l2loopback.sh) || vm_suite_give_up "cannot build v4l2loopback for the VM's kernel"
# The host's Chromium watches the live page in the VM (port 18480 there) through a forwarded port.
browser_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The host's account of the VM's CPUs, every 50 ms while it runs (Tests/tools/vcpu-wait.py --record): the
# cases' latency checks leave out the time the host kept them waiting for a core.
rm -f "$RESULTS/vcpu-wait.txt"
/usr/bin/python3 Tests/tools/vcpu-wait.py --record "$RESULTS/.qemu.pid" "$RESULTS/vcpu-wait.txt" 0.05 &
sampler=$!
vm_suite_run camera-return-cases.sh --vivid 'n_devs=2 multiplanar=1,2' --cpus 2 --env "LOOPBACK_KO=$ko" \
    --forward "$browser_port:18480" --env "BROWSER_PORT=$browser_port"
kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
vm_suite_finish
