# Tests/vm-cases/case-lib.sh — how every case script run inside the test VM starts. Source it with the
# results subfolder's name: `source "$(dirname "$0")/case-lib.sh" capture`. It refuses to run outside
# the VM (exit 2), makes R (CAMREC_VM_RESULTS/NAME, emptied) and gives ok/bad/check (counted in
# pass/fail; end with case_finish), elapsed (seconds since the start) and decoded_frames FILE.
if [[ ${CAMREC_VM:-} != 1 ]]; then
    echo "$(basename "$0"): run me inside the VM (its suite in Tests/suites does)" >&2
    exit 2
fi
R=${CAMREC_VM_RESULTS:?}/${1:?case-lib.sh needs the results subfolder name}
rm -rf "$R" && mkdir -p "$R"
pass=0 fail=0
ok() { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
T0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - T0 ))s"; }
decoded_frames() {
    ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1" 2>/dev/null
}
# The summary line every case script ends with, and its exit status.
case_finish() {
    echo "$pass passed, $fail failed"
    [[ $fail -eq 0 ]]
}
