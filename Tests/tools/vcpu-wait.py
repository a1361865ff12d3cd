#!/usr/bin/env python3
"""The test VM's virtual CPUs as the host's scheduler saw them: how long they waited for a host core.

    vcpu-wait.py PIDFILE

PIDFILE holds the pid Tests/vm/run.sh started qemu under (timeout's, or qemu's own). Prints one line,
"wait_ns=N run_ns=N threads=N now_ns=N": summed over qemu's vCPU threads (named "CPU n/TCG" or
"CPU n/KVM"), the nanoseconds each was runnable but waiting for a host core, and on one, from
/proc/PID/task/TID/schedstat; then the host's monotonic clock.
Read twice around a recording, the difference in wait_ns is the time the host withheld from the VM: the
guest cannot see it (under emulation its clock runs on while its CPU is not run), so a case that bounds
what a recorder may drop for want of CPU takes it from here. Exit status 1 when no vCPU thread is found.
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


def main():
    if len(sys.argv) != 2:
        print("usage: vcpu-wait.py PIDFILE", file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        pid = int(f.read().split()[0])
    candidates = [pid] + children(pid)
    for candidate in candidates:
        threads = vcpu_threads(candidate)
        if not threads:
            continue
        wait = run = 0
        for tid in threads:
            try:
                with open(f"/proc/{candidate}/task/{tid}/schedstat") as f:
                    on_cpu, waiting = f.read().split()[:2]
            except (OSError, ValueError):
                continue
            run += int(on_cpu)
            wait += int(waiting)
        print(f"wait_ns={wait} run_ns={run} threads={len(threads)} now_ns={time.monotonic_ns()}")
        return 0
    print(f"vcpu-wait.py: no vCPU thread under pid {pid} or its children", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
