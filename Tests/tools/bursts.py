"""The test tone's and the click player's marks in a recording's sound, found with FFmpeg's tools alone:
each burst is the first loud decoded sample (above 0.05) after at least half a second without one
(a resampled burst rings a little before its start, at a few hundredths). Times are the container's own, as ffprobe reports each decoded audio frame
(best_effort_timestamp, so MP4's edit list and the decoder's priming skip apply as a player applies
them), the samples from ffmpeg decoding the same frames in the same order. Shared by av-sync.py and
mic-sync.py."""
import array
import subprocess


def frames(path, stream, entries):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "frame=" + entries,
                          "-of", "csv=p=0", path], capture_output=True, text=True, check=True).stdout
    return [line.split(",") for line in out.splitlines() if line.strip()]


def audio_bursts(path, quiet_before_start=False):
    """The file times (seconds) at which bursts start; raises SystemExit when the decoders disagree.
    quiet_before_start: a burst in the first half second counts too (the sound is known to begin quiet)."""
    rate = int(subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=sample_rate",
                               "-of", "csv=p=0", path], capture_output=True, text=True, check=True).stdout.split()[0])
    audio_frames = [(float(f[0]), int(f[1])) for f in frames(path, "a:0", "best_effort_timestamp_time,nb_samples")]
    raw = subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", "-v", "error", "-i", path, "-map", "0:a:0", "-ac", "1",
                          "-f", "f32le", "-"], capture_output=True, check=True).stdout
    samples = array.array("f", raw)
    if len(samples) != sum(f[1] for f in audio_frames):
        raise SystemExit(f"FAIL: ffmpeg decoded {len(samples)} samples, ffprobe's frames hold {sum(f[1] for f in audio_frames)}")
    found, index = [], 0
    quiet = rate // 2 if quiet_before_start else 0
    for start, count in audio_frames:
        for i in range(count):
            level = abs(samples[index + i])
            if level > 0.05 and quiet >= rate // 2:
                found.append(start + i / rate)
            quiet = quiet + 1 if level <= 0.05 else 0
        index += count
    return found
