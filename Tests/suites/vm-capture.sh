#!/bin/bash
# Tests/suites/vm-capture.sh — camrec's V4L2 capture against the kernel's vivid driver, in the
# test VM (Tests/vm/run.sh): formats, sizes, picture fidelity, busy/missing/wrong nodes and
# vivid's fault injection. One VM boot runs every case (Tests/vm-cases/capture-cases.sh).
# Ends with the cases' "N passed, N failed" line; a VM that fails to run counts as one failure.
# Environment: see Tests/lib/vm-suite.sh (CAMREC, CAMREC_VM_RESULTS).
set -uo pipefail
source "$(dirname "$0")/../lib/vm-suite.sh"
vm_suite_start vm-capture
# The kernel's log holds its DQBUF log of each recording (Tests/vm-cases/device-log.sh): 16 MiB, not 128 KiB.
export CAMREC_VM_APPEND="${CAMREC_VM_APPEND:-} log_buf_len=16M"
echo "vm-capture: camrec $CAMREC, results in $RESULTS"
# Two vivid instances: 0 single-planar, 1 multi-planar (and unplugged by the last case).
vm_suite_run capture-cases.sh --vivid 'n_devs=2 multiplanar=1,2' \
    ${SKIP_DEFAULT:+--env SKIP_DEFAULT=1} ${SKIP_MATRIX:+--env SKIP_MATRIX=1}
vm_suite_finish
