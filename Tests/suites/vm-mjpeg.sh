#!/bin/bash
# Tests/suites/vm-mjpeg.sh — camrec recording a real V4L2 MJPEG node in the test VM: v4l2loopback
# (built for the VM's kernel by Tests/vm/v4l2loopback.sh) fed by ffmpeg and by a small writer
# that sends damaged frames. One VM boot runs every case (Tests/vm-cases/mjpeg-cases.sh).
# Ends with the cases' "N passed, N failed" line; a setup or VM failure counts as one failure.
#
# Environment: CAMREC=path  test this binary instead of building with `swift build`
#              CAMREC_VM_RESULTS=dir  keep results (recordings, logs) there
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"

give_up() { echo "vm-mjpeg: $*"; echo "0 passed, 1 failed"; exit 1; }

if [[ -z ${CAMREC:-} ]]; then
    swift build --product camrec 2>&1 | tail -n 3
    CAMREC="$(swift build --show-bin-path)/camrec"
fi
[[ -x $CAMREC ]] || give_up "no camrec binary at $CAMREC"
results=${CAMREC_VM_RESULTS:-$(mktemp -d /tmp/camrec-vm-mjpeg.XXXXXX)}
mkdir -p "$results"
echo "vm-mjpeg: camrec $CAMREC, results in $results"

ko=$(Tests/vm/v4l2loopback.sh) || give_up "cannot build v4l2loopback for the VM's kernel"
writer=$results/mjpeg-writer
gcc -O2 -Wall -o "$writer" Tests/fixtures/mjpeg-writer.c || give_up "cannot build Tests/fixtures/mjpeg-writer.c"

t0=$(date +%s)
Tests/vm/run.sh --timeout 900 --results "$results" --vivid 'n_devs=1 node_types=0x1' \
    --env "CAMREC=$(cd "$(dirname "$CAMREC")" && pwd)/$(basename "$CAMREC")" \
    --env "LOOPBACK_KO=$ko" --env "MJPEG_WRITER=$writer" \
    -- Tests/vm-cases/mjpeg-cases.sh 2>&1 | tee "$results/vm-mjpeg.log"
rc=${PIPESTATUS[0]}
echo "vm-mjpeg: VM run took $(( $(date +%s) - t0 )) s, exit $rc"
grep -qE '^[0-9]+ passed, [0-9]+ failed' "$results/vm-mjpeg.log" || give_up "the VM run ended without a result (exit $rc)"
exit "$rc"
