#!/usr/bin/env python3
"""Runs the test VM's analysis tools on the host, for Tests/vm/run.sh.

Under software emulation a process start costs the guest 4-8 s for ffprobe or ffmpeg (resolving
their ~200 shared libraries) and about 2 s for python3, against 0.1-0.3 s here; the VM suites
spent about half their time starting analysis tools. Case scripts call `on_host CMD...`
(Tests/vm-cases/case-lib.sh) for work on finished files in the results share, which has the same
path on both sides: capture, camrec and anything that reads the VM's devices, sockets or local
files still run in the VM.

Protocol, in DIR (the results share's .on-host folder; the guest mounts it uncached):
  guest writes ID.req: cwd, argv..., "end-of-request", each NUL-terminated (taken only once whole);
  host renames it to ID.run, runs it with no stdin, writes ID.out and ID.err, then ID.rc (by rename).
  run.sh removes DIR when the VM stops.
Only the tools named in ALLOWED run (ffprobe, ffmpeg, and python3 with a script in Tests/tools);
anything else gets exit status 126 and a message, so a case cannot quietly move other work here.
`/usr/bin/python3` is Debian's; a bare `python3` is the one the tests run (run.sh passes its path
in CAMREC_TEST_PYTHON), which has Selenium for the browser tools. Each tool runs in a session of
its own and is killed with its whole group (a browser's driver and renderers too).

usage: host-tools.py DIR   (runs until killed; run.sh stops it when the VM stops)
"""
import os
import signal
import subprocess
import sys
import threading
import time

ALLOWED_PROGRAMS = {"ffprobe", "ffmpeg"}
PYTHON = "/usr/bin/python3"
TEST_PYTHON = os.environ.get("CAMREC_TEST_PYTHON") or PYTHON
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
LIMIT_SECONDS = 600
END = b"\0end-of-request\0"
MAX_REQUEST = 64 * 1024  # a command line of the cases is well under 4 KiB
CHILDREN = set()
CHILDREN_LOCK = threading.Lock()


def command_for(cwd, argv):
    """The command line to run for a request, or None when it is not allowed."""
    if not argv:
        return None
    if argv[0] in ALLOWED_PROGRAMS:
        return argv
    if argv[0] in (PYTHON, "python3") and len(argv) >= 2:
        script = os.path.realpath(os.path.join(cwd, argv[1]))
        if os.path.dirname(script).endswith("/Tests/tools") and script.endswith(".py"):
            return [PYTHON if argv[0] == PYTHON else TEST_PYTHON] + argv[1:]
    return None


def kill_group(child):
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run(folder, ident):
    base = os.path.join(folder, ident)
    try:
        rc = run_request(base)
    except Exception as e:  # the guest waits for an .rc: it must always get one
        with open(base + ".err", "ab") as err:
            err.write(f"host-tools.py: {e!r}\n".encode())
        rc = 125
    # A signal's negative status becomes the shell's 128+N.
    with open(base + ".rc.tmp", "w") as f:
        f.write(f"{rc if rc >= 0 else 128 - rc}\n")
    os.rename(base + ".rc.tmp", base + ".rc")


def run_request(base):
    with open(base + ".run", "rb") as f:
        fields = f.read().split(b"\0")[:-2]
    cwd, argv = os.fsdecode(fields[0]), [os.fsdecode(a) for a in fields[1:]]
    with open(base + ".out", "wb") as out, open(base + ".err", "wb") as err:
        command = command_for(cwd, argv)
        if command is None:
            err.write(f"host-tools.py: not run on the host (only ffprobe, ffmpeg and {PYTHON} or python3 Tests/tools/*.py): {argv[:2]}\n".encode())
            rc = 126
        else:
            try:
                child = subprocess.Popen(command, cwd=cwd, env=ENV, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         start_new_session=True)
                with CHILDREN_LOCK:
                    CHILDREN.add(child)
                try:
                    rc = child.wait(timeout=LIMIT_SECONDS)
                except subprocess.TimeoutExpired:
                    kill_group(child)
                    child.wait()
                    err.write(f"host-tools.py: {argv[0]} ran over {LIMIT_SECONDS} s and was killed\n".encode())
                    rc = 124
                finally:
                    with CHILDREN_LOCK:
                        CHILDREN.discard(child)
            except OSError as e:
                err.write(f"host-tools.py: cannot run {argv[0]}: {e}\n".encode())
                rc = 127
    return rc


def refuse(folder, ident, path, why):
    """Answers a request that is not run, so it is not read again every poll."""
    base = os.path.join(folder, ident)
    os.rename(path, base + ".run")
    with open(base + ".err", "w") as err:
        err.write(f"host-tools.py: not run: {why}\n")
    with open(base + ".rc.tmp", "w") as f:
        f.write("125\n")
    os.rename(base + ".rc.tmp", base + ".rc")


def stop(signum, frame):
    """run.sh stops us when the VM stops: a tool still running for a guest that is gone goes too."""
    with CHILDREN_LOCK:
        for child in CHILDREN:
            kill_group(child)
    os._exit(0)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: host-tools.py DIR")
    signal.signal(signal.SIGTERM, stop)
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    while True:
        for entry in os.scandir(folder):
            if not entry.name.endswith(".req"):
                continue
            ident = entry.name[:-len(".req")]
            try:
                with open(entry.path, "rb") as f:
                    request = f.read(MAX_REQUEST + 1)
                if len(request) > MAX_REQUEST:
                    refuse(folder, ident, entry.path, f"a request over {MAX_REQUEST} bytes")
                    continue
                if not request.endswith(END):
                    continue  # still being written
                os.rename(entry.path, os.path.join(folder, ident + ".run"))
            except FileNotFoundError:
                continue
            threading.Thread(target=run, args=(folder, ident), daemon=True).start()
        time.sleep(0.02)


if __name__ == "__main__":
    main()
