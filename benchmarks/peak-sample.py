#!/usr/bin/env python3
"""Runs a command under GNU time (wall, user, sys, peak RSS from the kernel's rusage) and watches it while
it runs: every few milliseconds it reads /proc/PID/status and the names of the process's threads
(/proc/PID/task/TID/comm); whenever the resident set is the largest seen so far, with --smaps DIR, it
copies /proc/PID/smaps_rollup and /proc/PID/smaps there (what the memory is at its peak, not at the end).
"Threads at peak" are those it had while its resident set was within 5 % of the peak (an encoder's threads
are joined before it frees its frames, so the very largest sample may come after them). GNU time forks the
command, so its peak RSS is the command's own (a child spawned from Python would count Python's).

    peak-sample.py [--smaps DIR] OUT -- COMMAND...
    OUT gets one line: "wall user sys maxrss_kib threads_at_peak max_threads names", names being the threads
    at the peak by name (a thread inherits its name from the one that started it, so an encoder library's
    threads carry the name of the thread that opened it): "main*1,encode*3".
    stdout goes to /dev/null, stderr to OUT.err. Exits with the command's status.
"""
import os
import sys
import time


def read_names(pid):
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.append(f.read().strip().replace(" ", "_"))
        except FileNotFoundError:
            pass  # that thread just ended
    return names


def main():
    args = sys.argv[1:]
    smaps_dir = None
    if args[:1] == ["--smaps"]:
        smaps_dir, args = args[1], args[2:]
    out, sep, command = args[0], args[1], args[2:]
    if sep != "--" or not command:
        sys.exit(__doc__)
    timed = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", out + ".time", "--"] + command
    with open(os.devnull, "wb") as null, open(out + ".err", "wb") as err:
        time_pid = os.posix_spawn(timed[0], timed, os.environ,
                                  file_actions=[(os.POSIX_SPAWN_DUP2, null.fileno(), 1), (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
    pid, peak_rss, samples = None, -1, []
    while True:
        done, status = os.waitpid(time_pid, os.WNOHANG)
        if done:
            break
        try:
            if pid is None:
                with open(f"/proc/{time_pid}/task/{time_pid}/children") as f:
                    children = f.read().split()
                pid = int(children[0]) if children else None
            if pid is not None:
                rss = 0
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            rss = int(line.split()[1])
                            break
                samples.append((rss, read_names(pid)))
                if rss > peak_rss:
                    peak_rss = rss
                    if smaps_dir:
                        for name in ("smaps_rollup", "smaps"):
                            with open(f"/proc/{pid}/{name}") as f:
                                text = f.read()
                            with open(f"{smaps_dir}/{name}", "w") as f:
                                f.write(text)
        except (FileNotFoundError, ProcessLookupError):
            pass  # it is exiting: waitpid collects time next
        time.sleep(0.002)
    names_at_peak = max((n for r, n in samples if r >= 0.95 * peak_rss), key=len, default=[])
    max_threads = max((len(n) for r, n in samples), default=0)
    histogram = ",".join(f"{name}*{names_at_peak.count(name)}" for name in sorted(set(names_at_peak))) or "-"
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        with open(out + ".time") as f:
            measured = f.read().split()
        with open(out, "w") as f:
            f.write(" ".join(measured) + f" {len(names_at_peak)} {max_threads} {histogram}\n")
    sys.exit(code)


if __name__ == "__main__":
    main()
