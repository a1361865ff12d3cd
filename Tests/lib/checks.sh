# Tests/lib/checks.sh — the counting every shell suite shares. A suite sets PASS=0 FAIL=0 (and SKIP=0
# when it may skip a case) before its first check and ends with `finish`, whose line
# "N passed, N failed[, N skipped]" is the one scripts/test.sh reads.
pass() { PASS=$((PASS + 1)); echo "PASS  $*"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL  $*"; }
skip() { SKIP=$((SKIP + 1)); echo "SKIP  $*"; }
# check WHAT CMD...: passes WHAT when CMD succeeds.
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
finish() { echo "$PASS passed, $FAIL failed${SKIP+, $SKIP skipped}"; [[ $FAIL -eq 0 ]]; exit $?; }
