#!/bin/bash
# Tests/suites/vm-capture.sh — camrec's V4L2 capture against the kernel's vivid driver, in the
# test VM (Tests/vm/run.sh): formats, sizes, picture fidelity, busy/missing/wrong nodes and
# vivid's fault injection. One VM boot runs every case (Tests/vm-cases/capture-cases.sh).
# Ends with the cases' "N passed, N failed" line; a VM that fails to run counts as one failure.
#
# Environment: CAMREC=path  test this binary instead of building with `swift build`
#              CAMREC_VM_RESULTS=dir  keep results (recordings, logs) there
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"

if [[ -z ${CAMREC:-} ]]; then
    swift build --product camrec 2>&1 | tail -n 3
    CAMREC="$(swift build --show-bin-path)/camrec"
fi
if [[ ! -x $CAMREC ]]; then
    echo "vm-capture: no camrec binary at $CAMREC"
    echo "0 passed, 1 failed"
    exit 1
fi
results=${CAMREC_VM_RESULTS:-$(mktemp -d /tmp/camrec-vm-capture.XXXXXX)}
mkdir -p "$results"
echo "vm-capture: camrec $CAMREC, results in $results"

t0=$(date +%s)
# Two vivid instances: 0 single-planar, 1 multi-planar (and unplugged by the last case).
Tests/vm/run.sh --timeout 900 --results "$results" --vivid 'n_devs=2 multiplanar=1,2' \
    --env "CAMREC=$(cd "$(dirname "$CAMREC")" && pwd)/$(basename "$CAMREC")" \
    ${SKIP_DEFAULT:+--env SKIP_DEFAULT=1} ${SKIP_MATRIX:+--env SKIP_MATRIX=1} \
    -- Tests/vm-cases/capture-cases.sh 2>&1 | tee "$results/vm-capture.log"
rc=${PIPESTATUS[0]}
echo "vm-capture: VM run took $(( $(date +%s) - t0 )) s, exit $rc"
if ! grep -qE '^[0-9]+ passed, [0-9]+ failed' "$results/vm-capture.log"; then
    echo "vm-capture: the VM run ended without a result (exit $rc)"
    echo "0 passed, 1 failed"
    exit 1
fi
exit "$rc"
