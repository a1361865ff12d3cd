#!/bin/bash
# Tests/suites/vaapi-vm.sh — camrec's VA-API path in the test VM (Tests/vm/run.sh), where vgem gives a
# real DRM render node, /dev/dri/renderD128, and the test VA driver (Tests/fixtures/va-test-driver)
# runs behind it through libva's DRM backend, as a GPU driver would. Runs the exact user commands
# `camrec --test-pattern|--device /dev/video0 --encoder vaapi --vaapi-device /dev/dri/renderD128
# --frames 200 out.h264`, plus pixel identity, one CPU pass per frame (the log), auto, and the failures
# (Tests/vm-cases/vaapi-vm.sh).
# Ends with the cases' "N passed, N failed"; a VM that fails to run counts as one failure.
#
# Environment: CAMREC=path  test this binary instead of building with `swift build`
#              CAMREC_VM_RESULTS=dir  keep results (logs) there
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"

if [[ -z ${CAMREC:-} ]]; then
    swift build --product camrec 2>&1 | tail -n 3
    CAMREC="$(swift build --show-bin-path)/camrec"
fi
if [[ ! -x $CAMREC ]]; then
    echo "vaapi-vm: no camrec binary at $CAMREC"
    echo "0 passed, 1 failed"
    exit 1
fi
DRVDIR=$(Tests/fixtures/va-test-driver/build.sh | tail -n 1)
if [[ ! -f $DRVDIR/camrec_test_drv_video.so ]]; then
    echo "vaapi-vm: the test VA driver did not build"
    echo "0 passed, 1 failed"
    exit 1
fi
results=${CAMREC_VM_RESULTS:-$(mktemp -d /tmp/camrec-vaapi-vm.XXXXXX)}
mkdir -p "$results"
echo "vaapi-vm: camrec $CAMREC, driver $DRVDIR, results in $results"

t0=$(date +%s)
Tests/vm/run.sh --timeout 900 --results "$results" \
    --env "CAMREC=$(cd "$(dirname "$CAMREC")" && pwd)/$(basename "$CAMREC")" \
    --env LIBVA_DRIVER_NAME=camrec_test --env "LIBVA_DRIVERS_PATH=$DRVDIR" \
    -- Tests/vm-cases/vaapi-vm.sh 2>&1 | tee "$results/vaapi-vm.log"
rc=${PIPESTATUS[0]}
echo "vaapi-vm: VM run took $(( $(date +%s) - t0 )) s, exit $rc"
if ! grep -qE '^[0-9]+ passed, [0-9]+ failed' "$results/vaapi-vm.log"; then
    echo "vaapi-vm: the VM run ended without a result (exit $rc)"
    echo "0 passed, 1 failed"
    exit 1
fi
exit "$rc"
