#!/usr/bin/env bash
# camrec --rtsp beside GStreamer's gst-rtsp-server (issue 48): 200 clients (100 RTP over TCP interleaved,
# 100 RTP over UDP) of 1280x720 H.264 at 4 Mbit/s, 30 fps, in one run, four phases one after the other:
#   camrec, 0 clients   the test pattern encoded (libx264 ultrafast) and recorded to a file, --rtsp open;
#                       its recording is also what GStreamer serves (remuxed to Matroska for the frames'
#                       timestamps with ffmpeg -c copy: the same NAL units, so both servers send the same bytes)
#   camrec, 200 clients the same, with the clients playing
#   GStreamer, 0        benchmarks/rtsp-gst-server.py: a shared media factory (filesrc ! matroskademux !
#                       h264parse ! rtph264pay, the same 1400-byte MTU), no client yet
#   GStreamer, 200      the same, with the clients playing
# The clients are benchmarks/rtsp-load.c (four processes of 25 TCP + 25 UDP each, epoll, no decoding), so
# their CPU is theirs, not the server's. The machine may be shared, and with sched_autogroup (Linux's default
# on desktops and here) a nice value only orders the tasks of one session: other sessions' builds are
# weighed as whole groups against the benchmark's. So each server and the clients run in sessions of their
# own (setsid: an autogroup each) with the group niced -5 (/proc/PID/autogroup, root only; else as they
# come): other sessions' work delays the servers' sending and the clients' reading less, and the clients'
# CPU does not come out of the server's share, as it would not with clients on other machines. Over a window
# of SECONDS with every client playing, each server's CPU (utime+stime from /proc/PID/stat, and the kernel's
# share) and memory (RssAnon, and VmRSS) are read, its 0-client figure subtracted and the rest divided by the
# clients: CPU and memory per client, and the ratios camrec/GStreamer. camrec's thread
# count (/proc/PID/task) is sampled every second and must stay flat over the window, and its capture,
# encoder and event loop threads' time run and time waiting for a core (/proc/PID/task/TID/schedstat) is
# read at both ends of the window: what the clients' sending costs the capture and the encoder.
# Checks, from outside camrec: every camrec client's RTP sequence numbers have no gap, it has every access
# unit from its first IDR to the recording's last (how many: the recording's burned-in counters from the
# client's first frame, found by its RTP timestamp, to the end), and it ends on the recording's last frame;
# every 25th client's stream, written from its first IDR as Annex B, is byte for byte the recording's tail
# and ffprobe decodes as many frames from it; the recording loses none (its counters 0..N-1 without a gap,
# ffprobe counts N, the frames the source made: --duration times 30), with clients and without. The GStreamer
# clients' streams are checked for gaps and against the same bytes.
#   benchmarks/rtsp-clients.sh [SECONDS (30)] [TCP (100)] [UDP (100)]
# Needs gcc, ffmpeg, python3-gi and gir1.2-gst-rtsp-server-1.0 (apt-get install python3-gi
# gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-good gstreamer1.0-plugins-bad). Not part of scripts/test.sh.
set -u
cd "$(dirname "$0")/.."
CAMREC=${CAMREC:-.build/release/camrec}
S=${1:-30} TCP=${2:-100} UDP=${3:-100}
N=$((TCP + UDP))
W=${CAMREC_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$W"
[[ -n ${CAMREC_BENCH_DIR:-} ]] || trap 'rm -rf "$W"' EXIT
port=$((26000 + RANDOM % 2000))
T=$((S + 25))   # each camrec phase: up to 15 s for the clients to join, the window, a tail
gcc -O2 -o "$W/rtsp-load" benchmarks/rtsp-load.c || exit 1
/usr/bin/python3 -c 'import gi; gi.require_version("GstRtspServer", "1.0")' 2>/dev/null \
  || { echo "needs python3-gi and gir1.2-gst-rtsp-server-1.0" >&2; exit 1; }

# Samples PID every second into FILE: the time, the start time, threads, VmRSS KiB, utime+stime, utime, stime (ticks),
# RssAnon KiB (the process's own memory, without the shared libraries' pages, which come and go with the page cache).
sample() {
  local pid=$1 file=$2 t0 s
  t0=$(date +%s.%N)
  while [[ -d /proc/$pid ]]; do
    s=$(awk '{sub(/^.*\) /, ""); print $12 + $13, $12, $13}' "/proc/$pid/stat" 2>/dev/null) || break
    echo "$(date +%s.%N) $t0 $(ls "/proc/$pid/task" 2>/dev/null | wc -l) $(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null) $s $(awk '/^RssAnon/ {print $2}' "/proc/$pid/status" 2>/dev/null)" >>"$file"
    sleep 1
  done
}
# Marks the window in FILE (the start, then after S seconds the end) as wall-clock times; with a PID, also
# its threads at both ends into FILE.threads: the time, thread id, name, nice, then schedstat's ns on a core, ns
# waiting for one, and times run.
window() {
  date +%s.%N >"$1"
  [[ -n ${2:-} ]] && threads "$2" >"$1.threads"
  sleep "$S"
  [[ -n ${2:-} ]] && threads "$2" >>"$1.threads"
  date +%s.%N >>"$1"
}
threads() {
  local t now
  now=$(date +%s.%N)
  for t in /proc/$1/task/*; do
    echo "$now ${t##*/} $(cat "$t/comm") $(awk '{sub(/^.*\) /, ""); print $17}' "$t/stat") $(cat "$t/schedstat")"
  done 2>/dev/null
}
# A command after this runs in a session of its own (its own autogroup), the group niced -5 when the kernel
# lets us; it keeps the process id (setsid and bash exec it), so $! is its pid.
own_group=(setsid bash -c 'echo -5 >/proc/self/autogroup 2>/dev/null; exec "$@"' own_group)

# The clients: four processes (a quarter of each kind in each), each in a session of its own, so that a busy
# machine does not leave them unread (a TCP client read late makes camrec skip it ahead at an IDR) and their
# CPU is not the server's share; waits until all four print "playing". Their own CPU goes to NAME-*.cpu.
clients() {
  local url=$1 name=$2 seconds=$3 i part tcp udp
  for i in 0 1 2 3; do
    part=$(echo abcd | cut -c$((i + 1))) tcp=$((TCP / 4 + (i == 0 ? TCP % 4 : 0))) udp=$((UDP / 4 + (i == 0 ? UDP % 4 : 0)))
    "${own_group[@]}" /usr/bin/time -f "%U %S" -o "$W/$name-$part.cpu" \
      "$W/rtsp-load" "$url" "$tcp" "$udp" "$seconds" "$W/$name-$part-" 25 >"$W/$name-$part.out" 2>"$W/$name-$part.err" &
  done
  for _ in $(seq 300); do
    [[ $(cat "$W/$name"-[abcd].out 2>/dev/null | grep -c '^playing') == 4 ]] && return 0
    sleep 0.1
  done
  echo "$name: the clients did not all play within 30 s" >&2
  cat "$W/$name"-[abcd].err >&2
  return 1
}

camrec_phase() {  # name, clients (0 or N)
  local name=$1 n=$2 p=$((port++))
  "${own_group[@]}" "$CAMREC" --log-level info --test-pattern --size 1280x720 --fps 30 --bitrate 4M --preset ultrafast --duration "$T" \
    --rtsp "127.0.0.1:$p" --max-receivers "$N" --overwrite "$W/$name.h264" 2>"$W/$name.log" &
  local cam=$!
  sample "$cam" "$W/$name.samples" &
  for _ in $(seq 100); do grep -q "serving RTSP" "$W/$name.log" && break; sleep 0.1; done
  if ((n)); then
    clients "rtsp://127.0.0.1:$p/" "$name" $((T + 10)) || { kill "$cam"; return 1; }
  else
    sleep 5
  fi
  sleep 2
  window "$W/$name.window" "$cam"
  wait "$cam"
  wait
}

gst_phase() {  # name, clients
  local name=$1 n=$2 p=$((port++))
  "${own_group[@]}" /usr/bin/python3 benchmarks/rtsp-gst-server.py "$W/camrec-0.mkv" "$p" 1400 >"$W/$name.log" 2>&1 &
  local gst=$!
  sample "$gst" "$W/$name.samples" &
  for _ in $(seq 100); do grep -q serving "$W/$name.log" && break; sleep 0.1; done
  if ((n)); then
    clients "rtsp://127.0.0.1:$p/cam" "$name" $((S + 6)) || { kill "$gst"; return 1; }
  else
    sleep 3
  fi
  sleep 2
  window "$W/$name.window"
  kill "$gst"   # the clients see their connections close and print what they got
  wait
}

udp_errors() { awk '/^Udp:/ {if (h) print $6; h = 1}' /proc/net/snmp; }
echo "camrec: $CAMREC; $N clients ($TCP TCP, $UDP UDP), 1280x720 4 Mbit/s 30 fps; window $S s; load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores;" \
  "autogroups $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo ?), niced: $("${own_group[@]}" cat /proc/self/autogroup)"
udp_before=$(udp_errors)
camrec_phase camrec-0 0
ffmpeg -v error -y -framerate 30 -i "$W/camrec-0.h264" -c copy "$W/camrec-0.mkv" || exit 1
camrec_phase camrec-n "$N" || exit 1
gst_phase gst-0 0
gst_phase gst-n "$N" || exit 1
udp_after=$(udp_errors)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); UDP receive buffer errors during the run: $((udp_after - udp_before))"

python3 - "$W" "$N" "$((T * 30))" <<'PY'
import os, subprocess, sys
W, N, MADE = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
HZ = os.sysconf("SC_CLK_TCK")
failures = []

def samples(name):
    rows = [list(map(float, l.split())) for l in open(f"{W}/{name}.samples") if len(l.split()) == 8]
    return rows

def window(name):
    a, b = [float(l) for l in open(f"{W}/{name}.window")]
    rows = [r for r in samples(name) if a - 0.6 <= r[0] <= b + 0.6]
    first, last = rows[0], rows[-1]
    cpu = (last[4] - first[4]) / HZ / (last[0] - first[0])       # cores
    system = (last[6] - first[6]) / HZ / (last[0] - first[0])    # of which in the kernel
    rss = sum(r[3] for r in rows) / len(rows) / 1024              # MiB, mean over the window
    anon = sum(r[7] for r in rows) / len(rows) / 1024
    return cpu, rss, [int(r[2]) for r in rows], system, anon

def clients(name):
    out = []
    for part in "abcd":
        for line in open(f"{W}/{name}-{part}.out"):
            f = line.split()
            if f[0] == "client":
                d = dict(zip(f[3::2], map(int, f[4::2])))
                d.update(id=f"{part}{f[1]}", transport=f[2], part=part, index=int(f[1]))
                out.append(d)
    return out

def counters(path):
    r = subprocess.run(["python3", "Tests/tools/pattern-counters.py", path], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split() if x != "?"]

def probe_frames(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_frames", "-of", "csv=p=0", path], capture_output=True, text=True)
    return int(r.stdout.split()[0]) if r.stdout.strip() else -1

# The recordings, without clients and beside them, against the frames the source made (--duration at 30 fps):
# ffprobe's count, and the burned-in counters 0..MADE-1 without a gap.
for name, label in (("camrec-0", "without clients"), ("camrec-n", "beside the clients")):
    rec_counters = counters(f"{W}/{name}.h264")
    rec_frames = probe_frames(f"{W}/{name}.h264")
    # The source numbers every frame it makes, so those up to the last one recorded that are not in it.
    missing = max(rec_counters) + 1 - len(set(rec_counters))
    log = open(f"{W}/{name}.log").read()
    # The test pattern drops a frame when no pool buffer is free (the encoder 2 s behind) or when the
    # capture thread itself runs more than two frame intervals late (a camera's frame overwritten).
    fields = dict(f.split("=", 1) for f in log.split("capture counters:")[-1].split(chr(10))[0].split() if "=" in f)
    dropped, empty = int(fields.get("dropped", -1)), int(fields.get("pool_empty", -1))
    print(f"recording {label}: ffprobe {rec_frames} of the {MADE} frames the source made, burned-in counters "
          f"{rec_counters[0]}..{rec_counters[-1]}, {missing} missing; camrec: dropped {dropped} at capture, "
          f"{empty} for want of a pool buffer (the encoder behind), {dropped - empty} with the capture thread late")
    if name == "camrec-n" and (missing or rec_counters != list(range(MADE)) or rec_frames != MADE):
        failures.append("the recording lost frames")
rec = f"{W}/camrec-n.h264"
rec_counters = counters(rec)
rec_bytes = open(rec, "rb").read()
base = open(f"{W}/camrec-0.h264", "rb").read()

cs = clients("camrec-n")
last_ts = {c["last_ts"] for c in cs}
bad = []
c_last = rec_counters[-1]
for c in cs:
    span = round(((c["last_ts"] - c["first_ts"]) & 0xFFFFFFFF) / 3000)
    first = c_last - span
    expected = sum(1 for x in rec_counters if x >= first)
    if c["lost"] or not c["closed"] or c["aus"] != expected or c["before_idr"] or len(last_ts) != 1:
        bad.append(f"{c['id']} {c['transport']}: lost {c['lost']} aus {c['aus']} expected {expected} before_idr {c['before_idr']} closed {c['closed']}")
    c["expected"] = expected
print(f"camrec clients: {len(cs)} ({sum(c['transport'] == 'tcp' for c in cs)} TCP), RTP packets lost {sum(c['lost'] for c in cs)}, "
      f"access units {min(c['aus'] for c in cs)}..{max(c['aus'] for c in cs)} per client, all of the recording's from their first IDR: "
      f"{len(cs) - len(bad)}/{len(cs)}; all end on the same last frame: {len(last_ts) == 1}")
for b in bad[:10]:
    print("  not every frame:", b)
if bad or len(cs) != N:
    failures.append("a camrec client missed frames")
samples_ok = 0
sample_files = sorted(f for f in os.listdir(W) if f.startswith("camrec-n-") and f.endswith(".h264"))
for f in sample_files:
    data = open(f"{W}/{f}", "rb").read()
    c = next(c for c in cs if f"camrec-n-{c['part']}-{c['index']}.h264" == f)
    frames = probe_frames(f"{W}/{f}")
    same = len(data) > 0 and rec_bytes.endswith(data)
    samples_ok += same and frames == c["aus"]
    if not (same and frames == c["aus"]):
        print(f"  sample {f}: the recording's tail byte for byte: {same}; ffprobe {frames} frames, the client counted {c['aus']}")
print(f"sample clients' streams: {samples_ok}/{len(sample_files)} are the recording's tail byte for byte and decode to as many frames as the client counted")
if samples_ok != len(sample_files) or not sample_files:
    failures.append("a sample stream differs")

gs = clients("gst-n")
g_samples = sorted(f for f in os.listdir(W) if f.startswith("gst-n-") and f.endswith(".h264"))
g_same = sum(1 for f in g_samples if (d := open(f"{W}/{f}", "rb").read()) and d in base)
print(f"GStreamer clients: {len(gs)}, RTP packets lost {sum(c['lost'] for c in gs)}, access units {min(c['aus'] for c in gs)}..{max(c['aus'] for c in gs)} "
      f"per client; sample streams that are camrec's recording's bytes: {g_same}/{len(g_samples)}")

rows = {}
for name in ("camrec-0", "camrec-n", "gst-0", "gst-n"):
    rows[name] = window(name)
# Threads over the window (every client playing); Swift's concurrency pool may start a thread a core on
# demand, so flat means: constant, and at most one a core above the 0-client run.
threads_0, threads_n = rows["camrec-0"][2], rows["camrec-n"][2]
print(f"camrec threads, sampled every second over the window: 0 clients {min(threads_0)}..{max(threads_0)}, "
      f"{N} clients {min(threads_n)}..{max(threads_n)}")
if min(threads_n) != max(threads_n) or max(threads_n) > max(threads_0) + os.cpu_count():
    failures.append("camrec's thread count grew with the clients")

def thread_rates(name):
    rows = [l.split() for l in open(f"{W}/{name}.window.threads")]
    first, last = {}, {}
    for r in rows:
        (first if r[1] not in first else last)[r[1]] = r
    out = {}
    for tid, b in last.items():
        a = first[tid]
        dt = float(b[0]) - float(a[0])
        kind = "event loops" if b[2].startswith("NIO") else b[2]
        o = out.setdefault(kind, [0.0, 0.0, 0.0, b[3]])
        o[0] += (int(b[4]) - int(a[4])) / 1e6 / dt
        o[1] += (int(b[5]) - int(a[5])) / 1e6 / dt
        o[2] += (int(b[6]) - int(a[6])) / dt
    return out
print("\ncamrec's threads over the window, ms a second on a core / waiting for one (a run's mean wait), nice:")
for name, label in (("camrec-0", "0 clients"), ("camrec-n", f"{N} clients")):
    rates = thread_rates(name)
    print(f"  {label}: " + "; ".join(f"{k} {v[0]:.1f} / {v[1]:.1f} ({v[1] / v[2] if v[2] else 0:.2f} ms), nice {v[3]}"
                                     for k, v in rates.items() if k in ("capture", "encode-h264", "event loops")))
print()
print("| server | CPU, 0 clients | CPU, %d clients | per client | RSS (anonymous), 0 clients | %d clients | per client | VmRSS per client |" % (N, N))
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
per, kernel = {}, {}
for label, a, b in (("camrec", "camrec-0", "camrec-n"), ("gst-rtsp-server", "gst-0", "gst-n")):
    (c0, v0, _, k0, r0), (cn, vn, _, kn, rn) = rows[a], rows[b]
    per[label] = ((cn - c0) / N, (rn - r0) / N)
    kernel[label] = (kn - k0) / (cn - c0) if cn > c0 else 0
    print(f"| {label} | {c0 * 100:.1f}% | {cn * 100:.1f}% | {(cn - c0) / N * 100:.3f}% of a core | "
          f"{r0:.1f} MiB | {rn:.1f} MiB | {(rn - r0) / N * 1024:.0f} KiB | {(vn - v0) / N * 1024:.0f} KiB |")
cr = per["camrec"][0] / per["gst-rtsp-server"][0]
rr = per["camrec"][1] / per["gst-rtsp-server"][1] if per["gst-rtsp-server"][1] else float("nan")
print(f"\nof the CPU per client, in the kernel (sending, and on loopback the receiving side's softirq): "
      f"camrec {kernel['camrec'] * 100:.0f}%, gst-rtsp-server {kernel['gst-rtsp-server'] * 100:.0f}%")
for name in ("camrec-n", "gst-n"):
    cpu = sum(sum(map(float, open(f"{W}/{name}-{p}.cpu").read().split()[-2:])) for p in "abcd")
    print(f"the clients' own CPU in the {name} phase: {cpu:.1f} s (not in the servers' figures, nor in their autogroup)")
print(f"\nper client, camrec/GStreamer: CPU {cr:.2f}, anonymous RSS {rr:.2f} (target CPU <= 0.5)")
if failures:
    print("FAILED: " + "; ".join(failures))
    sys.exit(1)
PY
