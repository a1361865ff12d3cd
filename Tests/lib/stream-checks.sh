# Tests/lib/stream-checks.sh — sourced by the host suites: camrec's stream contract and frame order
# checked against truths from outside camrec (Tests/tools/annexb-check.py, ffprobe's key-frame flags,
# the burned-in frame number read by Tests/tools/pattern-counters.py) beside `camrec inspect`.
# Needs CAMREC set before the functions are called.

STREAM_TOOLS="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)"

# contract_ok FILE [annexb-check options…]: camrec inspect, the independent checker and ffprobe agree
# that FILE keeps the contract (4-byte start codes, SPS+PPS right before every IDR, one slice per
# picture, starts at an IDR) and that the IDRs are where ffprobe's decoder sees key frames.
# Prints what is wrong.
contract_ok() {
    local file=$1; shift
    local report idrs keys ok=0
    # All three run, so a failure says which of them saw it.
    "$CAMREC" inspect --summary "$file" >/dev/null 2>&1 || { echo "$file: camrec inspect says the contract is broken"; ok=1; }
    report=$(python3 "$STREAM_TOOLS/annexb-check.py" --json "$@" "$file") || { echo "$file: annexb-check: $report"; ok=1; }
    idrs=$(python3 -c 'import json, sys; print(" ".join(map(str, json.load(sys.stdin)["idr_pictures"])))' <<<"$report" 2>/dev/null)
    keys=$(key_frames "$file")
    [[ $idrs == "$keys" ]] || { echo "$file: IDRs at '$idrs' (annexb-check), ffprobe's key frames at '$keys'"; ok=1; }
    return $ok
}

# key_frames FILE: indices of the frames ffprobe flags as key frames, space-separated.
key_frames() {
    ffprobe -v error -select_streams v:0 -show_frames -show_entries frame=key_frame -of csv=p=0 "$1" 2>/dev/null |
        grep -o '^[01]' | awk '$1 == 1 { printf "%s%d", s, NR - 1; s = " " }'
}

# key_frame_counters FILE: the burned-in counters of FILE's key frames, in order (a file that dropped
# a frame has counters that run ahead of its frame numbers).
key_frame_counters() {
    local keys counters
    keys=$(key_frames "$1"); counters=$(counters_of "$1")
    awk -v keys="$keys" -v counters="$counters" 'BEGIN {
        n = split(counters, c, " ")
        m = split(keys, k, " ")
        for (j = 1; j <= m; j++) if (k[j] + 1 <= n) printf "%s%s", (j > 1 ? " " : ""), c[k[j] + 1]
    }'
}

# pictures_in FILE: pictures the independent checker counts (complete or not).
pictures_in() {
    python3 "$STREAM_TOOLS/annexb-check.py" --json "$1" 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["pictures"])' 2>/dev/null
}

# counters_of FILE: the burned-in frame numbers of a test-pattern recording, space-separated.
counters_of() { python3 "$STREAM_TOOLS/pattern-counters.py" "$1" | tr '\n' ' ' | sed 's/ $//'; }

# counters_run FILE FIRST LAST: the file's frames carry exactly FIRST, FIRST+1, …, LAST in order.
counters_run() {
    local got; got=$(counters_of "$1")
    [[ $got == "$(seq -s ' ' "$2" "$3")" ]] || { echo "$1: frame numbers $(counters_shown "$got") (want $2..$3)"; return 1; }
}

# counters_shown NUMBERS: a list of frame numbers for a failure's line: how many, the first and the last
# ones (a difference at the end shows, as it did not when the line was only the list's first 200 characters).
counters_shown() {
    awk '{ printf "%d frames:", NF; for (i = 1; i <= NF && i <= 12; i++) printf " %s", $i
           if (NF > 24) printf " …"; for (i = (NF > 24 ? NF - 11 : 13); i <= NF; i++) printf " %s", $i }' <<<"$1"
}

# counters_increasing FILE: every frame's number is readable and larger than the one before.
# With "but-last" the last picture is left out (a reader that stopped mid-frame has it cut off).
counters_increasing() {
    counters_of "$1" | tr ' ' '\n' | { if [[ ${2:-} == but-last ]]; then head -n -1; else cat; fi; } | awk '$1 == "?" || (NR > 1 && $1 <= last) { bad = 1 } { last = $1 } END { exit bad || NR == 0 }'
}

# counters_account FILE DROPPED: the frames start at 0 and rise, and the numbers missing between them
# are exactly the DROPPED frames camrec reported: nothing lost without being counted.
counters_account() {
    local got; got=$(counters_of "$1")
    awk -v d="$2" '{ for (i = 1; i <= NF; i++) { if ($i == "?" || (i > 1 && $i <= $(i - 1))) bad = 1 } }
        END { exit bad || $1 != 0 || $NF + 1 - NF != d }' <<<"$got" ||
        { echo "$1: frame numbers $(counters_shown "$got"), $2 reported dropped"; return 1; }
}

# counters_same COPY SOURCE: COPY holds exactly SOURCE's frames, numbers alike, from the first to the last.
counters_same() {
    local copy source; copy=$(counters_of "$1") source=$(counters_of "$2")
    [[ -n $copy && $copy == "$source" ]] || { echo "$1: frame numbers $(counters_shown "$copy"), $2: $(counters_shown "$source")"; return 1; }
}

# counters_slice COPY SOURCE: COPY holds a run of SOURCE's frames with nothing left out: from COPY's first
# frame on, as many as COPY has (a viewer that stopped before the recording ended).
counters_slice() {
    local copy source first n
    copy=$(counters_of "$1"); first=${copy%% *}; n=$(wc -w <<<"$copy")
    source=$(counters_of "$2" | tr ' ' '\n' | awk -v f="$first" '$1 == f { on = 1 } on' | head -n "$n" | tr '\n' ' ' | sed 's/ $//')
    [[ -n $copy && $copy == "$source" ]] || { echo "$1: frame numbers $(counters_shown "$copy"), $2 from there: $(counters_shown "$source")"; return 1; }
}

# counters_tail COPY SOURCE: COPY holds exactly SOURCE's frames from COPY's first frame to the end.
counters_tail() {
    local copy source first
    copy=$(counters_of "$1"); first=${copy%% *}
    source=$(counters_of "$2" | tr ' ' '\n' | awk -v f="$first" '$1 == f { on = 1 } on' | tr '\n' ' ' | sed 's/ $//')
    [[ -n $copy && $copy == "$source" ]] || { echo "$1: frame numbers $(counters_shown "$copy"), $2 from there: $(counters_shown "$source")"; return 1; }
}

# wait_log FILE REGEX [COUNT] [SECONDS]: waits until FILE has COUNT (default 1) lines matching REGEX.
wait_log() {
    local file=$1 pattern=$2 want=${3:-1} limit=${4:-20} i
    for ((i = 0; i < limit * 10; i++)); do
        (($(grep -cE "$pattern" "$file" 2>/dev/null || true) >= want)) && return 0
        sleep 0.1
    done
    echo "waited ${limit}s for $want line(s) matching '$pattern' in $file"; return 1
}

# killed_partial FILE LOG: records the test pattern to FILE (stderr to LOG), SIGKILLs camrec 4 s after
# it starts encoding, and prints the .partial it left beside FILE (nothing if none).
killed_partial() {
    local p
    "$CAMREC" --test-pattern --frames 100000 "$1" >/dev/null 2>"$2" & p=$!
    wait_log "$2" "encoding in" 1 20 >/dev/null; sleep 4
    kill -9 $p; wait $p 2>/dev/null
    ls "$(dirname "$1")"/*.partial 2>/dev/null | head -1
}
