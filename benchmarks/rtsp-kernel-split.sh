#!/usr/bin/env bash
# Where a server's CPU a client goes (issue 48): camrec --rtsp, then gst-rtsp-server, each serving the
# clients of benchmarks/rtsp-clients.sh (100 RTP over TCP interleaved + 100 over UDP, 1280x720 H.264 at
# 4 Mbit/s, 30 fps, 1400-byte packets, benchmarks/rtsp-load.c), one after the other. With every client
# playing: `perf record -a -g` for SECONDS, then `perf stat` for 5 s of the server's send calls and of the
# machine's wake-ups and loopback packets. The server's samples (camrec: its event loops only; its encoder
# runs without clients as well) are split by their kernel stacks, in % of a core a client:
#   send            the send calls (UDP sendmmsg/sendto, TCP write/writev/sendmsg) up to the loopback device;
#                   a sample in sendmsg above the protocol's own functions is not told TCP from UDP
#   receivers       on loopback the receiving side runs in the sender's softirq (charged to the sender):
#                   IP, UDP and TCP receive, segmenting a UDP GSO run for a socket without UDP_GRO,
#                   waking the client
#   user, scheduler switches, other kernel work
# perf samples cpu-clock (no PMU in a VM), so time with interrupts off is charged where they come back on.
#   benchmarks/rtsp-kernel-split.sh [SECONDS (10)]
# Needs perf, gcc, ffmpeg, python3-gi and gir1.2-gst-rtsp-server-1.0; root for perf -a. Not part of scripts/test.sh.
set -u
cd "$(dirname "$0")/.."
CAMREC=${CAMREC:-.build/release/camrec}
S=${1:-10}
# Clients a process, four processes: 25 over TCP and 25 over UDP unless TCP_EACH / UDP_EACH say otherwise.
TCP_EACH=${TCP_EACH:-25} UDP_EACH=${UDP_EACH:-25}
W=${CAMREC_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$W"
[[ -n ${CAMREC_BENCH_DIR:-} ]] || trap 'rm -rf "$W"' EXIT
gcc -O2 -o "$W/rtsp-load" benchmarks/rtsp-load.c || exit 1
port=$((28000 + RANDOM % 2000))
# Each server and the clients in an autogroup of their own, niced -5, as in benchmarks/rtsp-clients.sh.
own_group=(setsid bash -c 'echo -5 >/proc/self/autogroup 2>/dev/null; exec "$@"' own_group)

phase() {  # camrec|gst
  local name=$1 p=$((port++)) server url
  mkdir -p "$W/$name"
  if [[ $name == camrec ]]; then
    "${own_group[@]}" "$CAMREC" --test-pattern --size 1280x720 --fps 30 --bitrate 4M --preset ultrafast --duration $((S + 45)) \
      --rtsp "127.0.0.1:$p" --max-receivers 200 --overwrite "$W/camrec/recording.h264" 2>"$W/camrec/log" &
    server=$! url=rtsp://127.0.0.1:$p/
    for _ in $(seq 100); do grep -q "serving RTSP" "$W/camrec/log" && break; sleep 0.1; done
  else
    # camrec's own recording of the first phase (the same bytes), as in benchmarks/rtsp-clients.sh.
    ffmpeg -v error -y -framerate 30 -i "$W/camrec/recording.h264" -c copy "$W/gst/source.mkv" || exit 1
    "${own_group[@]}" /usr/bin/python3 benchmarks/rtsp-gst-server.py "$W/gst/source.mkv" "$p" 1400 >"$W/gst/log" 2>&1 &
    server=$! url=rtsp://127.0.0.1:$p/cam
    for _ in $(seq 100); do grep -q serving "$W/gst/log" && break; sleep 0.1; done
  fi
  for part in a b c d; do
    "${own_group[@]}" "$W/rtsp-load" "$url" "$TCP_EACH" "$UDP_EACH" $((S + 30)) "$W/$name/$part-" 0 >"$W/$name/$part.out" 2>"$W/$name/$part.err" &
  done
  for _ in $(seq 300); do [[ $(cat "$W/$name"/[abcd].out 2>/dev/null | grep -c '^playing') == 4 ]] && break; sleep 0.1; done
  sleep 3
  perf record -a -g -F 499 -o "$W/$name/perf.data" -- sleep "$S" >/dev/null 2>&1
  perf stat -x, -p "$server" -o "$W/$name/calls" -e syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendmmsg,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg -- sleep 5
  perf stat -x, -a -o "$W/$name/machine" -e sched:sched_wakeup,sched:sched_switch,net:net_dev_xmit -- sleep 5
  echo "$server" >"$W/$name/pid"
  # camrec ends by itself (its recording complete for GStreamer's phase); GStreamer serves until killed.
  [[ $name == gst ]] && kill "$server"
  wait
  grep -h '^client' "$W/$name"/[abcd].out | awk -v n="$name" '{l += $7} END {print n ": " NR " clients, RTP packets lost " l}'
}
echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; camrec: $CAMREC"
phase camrec
phase gst
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$W" "$S" "$((4 * (TCP_EACH + UDP_EACH)))" <<'PY'
import collections, subprocess, sys
W, S, HZ, N = sys.argv[1], int(sys.argv[2]), 499, int(sys.argv[3])
RX = {"net_rx_action", "process_backlog", "__netif_receive_skb_one_core"}
WAKE = {"try_to_wake_up", "ep_poll_callback", "sock_def_readable", "__wake_up_sync_key", "__wake_up_common"}
ORDER = ["send: UDP", "send: TCP", "send: sendmsg, TCP or UDP", "receivers: UDP, segmenting GSO runs", "receivers: UDP, other", "receivers: TCP",
         "receivers: IP, loopback, freeing", "receivers: waking the clients", "user", "scheduler switches", "other kernel"]

def split(name):
    pid = open(f"{W}/{name}/pid").read().strip()
    out = subprocess.run(["perf", "script", "-i", f"{W}/{name}/perf.data", "--pid", pid, "-F", "comm,ip,sym,dso"],
                         capture_output=True, text=True).stdout
    c = collections.Counter()
    for block in out.split("\n\n"):
        lines = [l for l in block.strip().split("\n") if l.strip()]
        if len(lines) < 2 or (name == "camrec" and not lines[0].strip().startswith("NIO")):
            continue
        frames = lines[1:]
        syms = {f.split()[1].split("+")[0] for f in frames if len(f.split()) > 1}
        if "kallsyms" not in frames[0]:
            k = "user"
        elif syms & RX:
            if {"__udp_gso_segment", "skb_segment"} & syms: k = "receivers: UDP, segmenting GSO runs"
            elif syms & WAKE: k = "receivers: waking the clients"
            elif {"udp_unicast_rcv_skb", "__udp4_lib_rcv", "udp_rcv"} & syms: k = "receivers: UDP, other"
            elif "tcp_v4_rcv" in syms: k = "receivers: TCP"
            else: k = "receivers: IP, loopback, freeing"
        elif {"ksys_write", "do_writev", "tcp_sendmsg", "tcp_sendmsg_locked"} & syms:
            k = "send: TCP"
        elif {"__sys_sendmmsg", "__sys_sendto", "udp_sendmsg"} & syms:
            k = "send: UDP"
        elif "__sys_sendmsg" in syms:
            k = "send: sendmsg, TCP or UDP"
        elif {"finish_task_switch.isra.0", "__schedule"} & syms:
            k = "scheduler switches"
        else:
            k = "other kernel"
        c[k] += 1
    return {k: v / HZ / S / N * 100 for k, v in c.items()}

def counts(name, file):
    rows = [l.split(",") for l in open(f"{W}/{name}/{file}") if l.strip() and not l.startswith("#")]
    return {r[2].split(":")[-1]: float(r[0]) / 5 for r in rows if r[0].replace(".", "").isdigit()}

cam, gst = split("camrec"), split("gst")
print(f"\n| % of a core a client | camrec (its event loops) | gst-rtsp-server | camrec/GStreamer |")
print("| --- | ---: | ---: | ---: |")
for k in ORDER:
    a, b = cam.get(k, 0), gst.get(k, 0)
    print(f"| {k} | {a:.4f}% | {b:.4f}% | {a / b if b else float('nan'):.2f} |")
for label, keys in (("send, all", [k for k in ORDER if k.startswith("send")]),
                    ("receivers, all", [k for k in ORDER if k.startswith("receivers")]),
                    ("kernel, all", [k for k in ORDER if k != "user"]), ("**total**", ORDER)):
    a, b = sum(cam.get(k, 0) for k in keys), sum(gst.get(k, 0) for k in keys)
    print(f"| {label} | {a:.4f}% | {b:.4f}% | {a / b:.2f} |")
for name in ("camrec", "gst"):
    calls, machine = counts(name, "calls"), counts(name, "machine")
    print(f"{name}: a second, " + ", ".join(f"{k.replace('sys_enter_', '')} {v:.0f}" for k, v in calls.items() if v)
          + "; the machine's " + ", ".join(f"{k} {v:.0f}" for k, v in machine.items()))
PY
