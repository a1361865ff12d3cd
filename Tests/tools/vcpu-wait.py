#!/usr/bin/env python3
"""The test VM's virtual CPUs as the host's scheduler saw them: how long they waited for a host core.

    vcpu-wait.py PIDFILE
    vcpu-wait.py --record PIDFILE OUT SECONDS
    vcpu-wait.py --waited OUT MARKER MS

PIDFILE holds the pid Tests/vm/run.sh started qemu under (timeout's, or qemu's own). The first form prints
one line, "wait_ns=N run_ns=N threads=N now_ns=N": summed over qemu's vCPU threads (named "CPU n/TCG" or
"CPU n/KVM"), the nanoseconds each was runnable but waiting for a host core, and on one, from
/proc/PID/task/TID/schedstat; then the host's monotonic clock.
Read twice around a recording, the difference in wait_ns is the time the host withheld from the VM: the
guest cannot see it (under emulation its clock runs on while its CPU is not run), so a case that bounds
what a recorder may drop for want of CPU takes it from here. Exit status 1 when no vCPU thread is found.

--record waits up to 10 minutes for PIDFILE, then appends "REALTIME_NS WAIT_NS THREADS" to OUT every SECONDS
(the host's wall clock, and wait_ns as above) until qemu has gone. --waited prints, in whole milliseconds,
how long the VM's CPUs each waited for a host core on average in the MS milliseconds after MARKER's
modification time (a file the guest made on the shared results folder: the host stamps it with its own
clock, which the guest's does not share), from OUT's samples on either side of the window; 0 when
they do not cover it (no time excused without a measurement).
"""
import os
import sys
import time


def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: the fields start after the last ')'.
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def vcpu_threads(pid):
    threads = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return threads
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        if name.startswith("CPU ") and "/" in name:
            threads.append(tid)
    return threads


def find_vcpus(pid):
    """(the process that has the vCPU threads, their tids), or None."""
    for candidate in [pid] + children(pid):
        threads = vcpu_threads(candidate)
        if threads:
            return candidate, threads
    return None


def sample(process, threads):
    """(wait_ns, run_ns) summed over the threads, or None once qemu has gone."""
    wait = run = 0
    read = 0
    for tid in threads:
        try:
            with open(f"/proc/{process}/task/{tid}/schedstat") as f:
                on_cpu, waiting = f.read().split()[:2]
        except (OSError, ValueError):
            continue
        run += int(on_cpu)
        wait += int(waiting)
        read += 1
    return (wait, run) if read else None


def record(pidfile, out, every):
    deadline = time.monotonic() + 600
    found = None
    while found is None and time.monotonic() < deadline:
        try:
            with open(pidfile) as f:
                found = find_vcpus(int(f.read().split()[0]))
        except (OSError, ValueError, IndexError):
            pass
        if found is None:
            time.sleep(0.2)
    if found is None:
        print(f"vcpu-wait.py: no vCPU thread under {pidfile} within 10 minutes", file=sys.stderr)
        return 1
    process, threads = found
    with open(out, "a") as f:
        while True:
            now = time.time_ns()
            counted = sample(process, threads)
            if counted is None:
                return 0
            f.write(f"{now} {counted[0]} {len(threads)}\n")
            f.flush()
            time.sleep(every)


def waited(out, marker, ms):
    start = os.stat(marker).st_mtime_ns
    end = start + ms * 1_000_000
    samples = []
    with open(out) as f:
        for line in f:
            fields = line.split()
            if len(fields) == 3 and all(x.isdigit() for x in fields) and int(fields[2]) > 0:
                samples.append((int(fields[0]), int(fields[1]) / int(fields[2])))

    def at(t):
        """The mean wait per vCPU at host time t, between the samples on either side; None outside them."""
        for (t0, w0), (t1, w1) in zip(samples, samples[1:]):
            if t0 <= t <= t1:
                return w0 + (w1 - w0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0)
        return None

    first, last = at(start), at(end)
    print(int(max(0, last - first) / 1e6) if first is not None and last is not None else 0)
    return 0


def main():
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "--record":
        return record(args[1], args[2], float(args[3]))
    if len(args) == 4 and args[0] == "--waited" and args[3].isdigit():
        return waited(args[1], args[2], int(args[3]))
    if len(args) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    with open(args[0]) as f:
        pid = int(f.read().split()[0])
    found = find_vcpus(pid)
    counted = sample(*found) if found else None
    if counted is None:
        print(f"vcpu-wait.py: no vCPU thread under pid {pid} or its children", file=sys.stderr)
        return 1
    print(f"wait_ns={counted[0]} run_ns={counted[1]} threads={len(found[1])} now_ns={time.monotonic_ns()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
