#!/usr/bin/env python3
"""Plays clicks into an ALSA device and logs the monotonic time each one is played.

Usage: click-player.py DEVICE SECONDS LOG [--rate 48000] [--channels 1] [--every 1.0] [--first 1.0]

Silence but for a 10 ms 1 kHz burst (amplitude 0.5) every EVERY seconds of the stream, the first at
FIRST seconds. For each burst LOG gets a line "click INDEX MONOTONIC_NS", once it has been played: the
CLOCK_MONOTONIC time at which its first sample was played, from ALSA's hardware timestamp of the playback
pointer (the same clock V4L2 stamps frames with) at the last write before it played. On snd-aloop the capture side receives a sample when the playback
side plays it, so a recorder of hw:Loopback,1 should find each burst at the logged time.

Independent of camrec: libasound through ctypes, nothing else.
"""
import bisect
import ctypes
import math
import struct
import sys

args = sys.argv[1:]
if len(args) < 3:
    sys.exit(__doc__)
device, seconds, log_path = args[0], float(args[1]), args[2]
opts = dict(zip(args[3::2], args[4::2]))
rate = int(opts.get("--rate", 48000))
channels = int(opts.get("--channels", 1))
every = float(opts.get("--every", 1.0))
first = float(opts.get("--first", 1.0))

asound = ctypes.CDLL("libasound.so.2")
asound.snd_strerror.restype = ctypes.c_char_p
asound.snd_pcm_writei.restype = ctypes.c_long
asound.snd_pcm_writei.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulong]


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def check(status, what):
    if status < 0:
        sys.exit(f"click-player: {what}: {asound.snd_strerror(status).decode()}")
    return status


pcm = ctypes.c_void_p()
check(asound.snd_pcm_open(ctypes.byref(pcm), device.encode(), 0, 0), f"open {device}")
# S16_LE (2), RW interleaved (3), no resampling, 400 ms of buffer: an emulated CPU busy with a
# recorder beside it must not let it run dry.
check(asound.snd_pcm_set_params(pcm, 2, 3, channels, rate, 0, 400000), "set_params")
sw = ctypes.c_void_p()
check(asound.snd_pcm_sw_params_malloc(ctypes.byref(sw)), "sw_params_malloc")
check(asound.snd_pcm_sw_params_current(pcm, sw), "sw_params_current")
check(asound.snd_pcm_sw_params_set_tstamp_mode(pcm, sw, 1), "tstamp_mode")      # SND_PCM_TSTAMP_ENABLE
check(asound.snd_pcm_sw_params_set_tstamp_type(pcm, sw, 1), "tstamp_type")      # MONOTONIC
check(asound.snd_pcm_sw_params(pcm, sw), "sw_params")
buffer_size, period_size = ctypes.c_ulong(), ctypes.c_ulong()
check(asound.snd_pcm_get_params(pcm, ctypes.byref(buffer_size), ctypes.byref(period_size)), "get_params")

burst = int(rate * 0.010)
total = int(seconds * rate)
clicks = []  # stream positions of the bursts' first samples
t = first
while t * rate + burst <= total:
    clicks.append(int(round(t * rate)))
    t += every


one = b"".join(struct.pack("<h", int(0.5 * math.sin(2 * math.pi * 1000 * i / rate) * 32767)) * channels for i in range(burst))
frame_bytes = 2 * channels


def samples(start, count):
    """The stream's frames [start, start + count): silence with the bursts that fall in it (made as
    needed: an hour of stream is 345 MB)."""
    out = bytearray(count * frame_bytes)
    for click in clicks[bisect.bisect_left(clicks, start - burst):]:
        if click >= start + count:
            break
        if click + burst <= start:
            continue
        lo, hi = max(click, start), min(click + burst, start + count)
        out[(lo - start) * frame_bytes:(hi - start) * frame_bytes] = one[(lo - click) * frame_bytes:(hi - click) * frame_bytes]
    return bytes(out)


block = max(int(period_size.value), 64)
written = 0
logged = 0
latest = {}
out = open(log_path, "w", buffering=1)
while written < total:
    count = min(block, total - written)
    frames = samples(written, count)
    done = asound.snd_pcm_writei(pcm, frames, count)
    if done < 0:
        check(asound.snd_pcm_recover(pcm, int(done), 1), "recover")
        print("click-player: underrun", file=sys.stderr)
        continue
    written += done
    avail = ctypes.c_ulong()
    stamp = Timespec()
    if asound.snd_pcm_htimestamp(pcm, ctypes.byref(avail), ctypes.byref(stamp)) < 0 or stamp.tv_sec == 0:
        continue
    # At `stamp` the device had `avail` frames free: what was queued then is still to be played.
    queued = buffer_size.value - avail.value
    playing = written - queued
    now = stamp.tv_sec * 1_000_000_000 + stamp.tv_nsec
    # Each click's time is estimated from the pointer and the nominal rate at every write while it is
    # still to be played, and logged once it has been: the last estimate was made at most a period
    # before it played, so a clock off its nominal rate (snd-aloop's rate shift) barely moves it.
    for k in range(logged, len(clicks)):
        if clicks[k] >= written or playing < 0:
            break
        estimate = now + (clicks[k] - playing) * 1_000_000_000 // rate
        if clicks[k] >= playing:
            latest[k] = estimate
        else:
            out.write(f"click {k} {latest.pop(k, estimate)}\n")
            logged = k + 1
asound.snd_pcm_drain(pcm)
asound.snd_pcm_close(pcm)
