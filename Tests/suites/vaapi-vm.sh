#!/bin/bash
# Tests/suites/vaapi-vm.sh — camrec's VA-API path in the test VM (Tests/vm/run.sh), where vgem gives a
# real DRM render node, /dev/dri/renderD128, and the test VA driver (Tests/fixtures/va-test-driver)
# runs behind it through libva's DRM backend, as a GPU driver would. Runs the exact user commands
# `camrec --test-pattern|--device /dev/video0 --encoder vaapi --vaapi-device /dev/dri/renderD128
# --frames 200 out.h264`, plus pixel identity, one CPU pass per frame (the log), auto, and the failures
# (Tests/vm-cases/vaapi-vm.sh).
# Ends with the cases' "N passed, N failed"; a VM that fails to run counts as one failure.
# Environment: see Tests/lib/vm-suite.sh (CAMREC, CAMREC_VM_RESULTS).
set -uo pipefail
source "$(dirname "$0")/../lib/vm-suite.sh"
vm_suite_start vaapi-vm
# The kernel's log holds its DQBUF log of each recording (Tests/vm-cases/device-log.sh): 16 MiB, not 128 KiB.
export CAMREC_VM_APPEND="${CAMREC_VM_APPEND:-} log_buf_len=16M"
DRVDIR=$(Tests/fixtures/va-test-driver/build.sh | tail -n 1)
[[ -f $DRVDIR/camrec_test_drv_video.so ]] || vm_suite_give_up "the test VA driver did not build"
echo "vaapi-vm: camrec $CAMREC, driver $DRVDIR, results in $RESULTS"
vm_suite_run vaapi-vm.sh --env LIBVA_DRIVER_NAME=camrec_test --env "LIBVA_DRIVERS_PATH=$DRVDIR"
vm_suite_finish
