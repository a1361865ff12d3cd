#!/bin/bash
# Tests/suites/vm-microphone.sh — `--audio DEVICE` from real ALSA drivers (snd-aloop, snd-dummy) with
# vivid and v4l2loopback in the test VM: clicks played at logged monotonic times found at those times in
# the recording, against pictures written into the camera at logged times,
# a clock 0.5% off, forced overruns, segments, device errors, `camrec devices`. One VM boot runs every
# case (Tests/vm-cases/microphone-cases.sh). Ends with the cases' "N passed, N failed" line; a setup or
# VM failure counts as one failure. Environment: see Tests/lib/vm-suite.sh (CAMREC, CAMREC_VM_RESULTS).
set -uo pipefail
source "$(dirname "$0")/../lib/vm-suite.sh"
vm_suite_start vm-microphone
echo "vm-microphone: camrec $CAMREC, results in $RESULTS"
# One emulated CPU: with two, the monotonic times the player and camrec read (on different vCPUs)
# disagreed by a steady 5 ms under TCG (±0.6 ms on one); the player's 400 ms buffer keeps it fed.
# The camera of the timed cases: v4l2loopback fed numbered pictures at logged times.
ko=$(Tests/vm/v4l2loopback.sh) || vm_suite_give_up "cannot build v4l2loopback for the VM's kernel"
vm_suite_run microphone-cases.sh --vivid 'n_devs=1 node_types=0x1' --env "LOOPBACK_KO=$ko"

vm_suite_finish
