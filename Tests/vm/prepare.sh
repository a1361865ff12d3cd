#!/bin/bash
# Tests/vm/prepare.sh — build (once) the kernel + initramfs that Tests/vm/run.sh boots.
#
# Idempotent and safe to run concurrently (flock on the cache dir). On success it prints one
# line: the kernel and initramfs paths. Everything goes to ${CAMREC_VM_CACHE:-/var/cache/camrec-vm},
# outside the repo, so every clone on the machine shares it.
#
#   Tests/vm/prepare.sh            build if missing or stale
#   Tests/vm/prepare.sh --force    rebuild the initramfs (the kernel package is re-used)
#   Tests/vm/prepare.sh --print-env  print KERNEL=... INITRD=... KVER=... (for run.sh)
set -euo pipefail

CACHE=${CAMREC_VM_CACHE:-/var/cache/camrec-vm}
# Not root and no sudo: fall back to a per-user cache.
if [[ -z ${CAMREC_VM_CACHE:-} && $EUID -ne 0 && ! -w $CACHE ]] && ! sudo -n true 2>/dev/null; then
    CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/camrec-vm
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FORCE=0 PRINT_ENV=0
for a in "$@"; do
    case $a in
        --force) FORCE=1 ;;
        --print-env) PRINT_ENV=1 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "prepare.sh: unknown argument: $a" >&2; exit 2 ;;
    esac
done

# Modules the VM needs; their dependencies are added by modprobe --show-depends.
# virtio_pci: the PCI transport; 9pnet_virtio + 9p: the host-root and share mounts;
# overlay: writable /tmp and /var/tmp on top of the read-only host root;
# vivid: V4L2 test devices; vgem: a DRM render node; loop: loop devices for later tests;
# virtio_net: the NIC that run.sh --forward adds (a host browser reaching a server in the VM);
# snd-aloop: ALSA loopback cards, a real ALSA driver: what a player writes to hw:Loopback,0 is
# captured from hw:Loopback,1 (microphone tests); snd-dummy: a card with narrower formats (refusals);
# sch_netem: delay, jitter and loss on the NIC (`tc qdisc ... netem`; this machine's own kernel has none).
MODULES=(virtio_pci 9pnet_virtio 9p overlay loop vgem vivid virtio_net snd-aloop snd-dummy sch_netem)

log() { :; }
[[ ${CAMREC_VM_VERBOSE:-0} == 1 ]] && log() { echo "prepare.sh: $*" >&2; }
die() { echo "prepare.sh: $*" >&2; exit 1; }

as_root() {
    if [[ $EUID -eq 0 ]]; then "$@"
    elif command -v sudo >/dev/null; then sudo -n "$@"
    else die "need root for: $*"; fi
}

mkdir -p "$CACHE" 2>/dev/null || as_root install -d -m 0755 "$CACHE"
[[ -w $CACHE ]] || as_root chown "$(id -u):$(id -g)" "$CACHE"

exec 9>"$CACHE/.lock"
flock 9

# 1. Host tools.
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
# busybox-static: ldd fails on a static binary ("not a dynamic executable").
{ [[ -x /bin/busybox ]] && ! ldd /bin/busybox >/dev/null 2>&1; } || need+=(busybox-static)
command -v depmod >/dev/null || [[ -x /usr/sbin/depmod || -x /sbin/depmod ]] || need+=(kmod)
command -v cpio >/dev/null || need+=(cpio)
if ((${#need[@]})); then
    log "installing ${need[*]}"
    # apt may be busy (unattended upgrades, another job): wait for its lock.
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=600 \
        install -y --no-install-recommends "${need[@]}" >"$CACHE/apt-install.log" 2>&1 ||
        die "apt-get install ${need[*]} failed; see $CACHE/apt-install.log"
fi
PATH=$PATH:/usr/sbin:/sbin
BUSYBOX=/bin/busybox

# 2. The kernel package: the one linux-image-amd64 currently depends on.
# apt-cache takes seconds on a big package list, so the answer is cached for a day
# (CAMREC_VM_RECHECK=1 or --force asks again).
find_pkg() { apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1; }
pkg=
if ((!FORCE)) && [[ ${CAMREC_VM_RECHECK:-0} != 1 ]] && [[ -n $(find "$CACHE/current" -mmin -1440 2>/dev/null) ]]; then
    pkg=$(cat "$CACHE/current")
fi
[[ -n $pkg ]] || pkg=$(find_pkg)
if [[ -z $pkg ]]; then
    # No package lists (fresh container)?
    as_root apt-get -qq update >/dev/null 2>&1 || true
    pkg=$(find_pkg)
    # Offline: fall back to whatever we built last time.
    [[ -n $pkg ]] || pkg=$(cat "$CACHE/current" 2>/dev/null || true)
    [[ -n $pkg ]] || die "cannot find the kernel package (apt-cache depends linux-image-amd64)"
fi
KVER=${pkg#linux-image-}
KDIR=$CACHE/$KVER
ROOT=$KDIR/root
BZIMAGE=$ROOT/boot/vmlinuz-$KVER
# The uncompressed ELF kernel, booted by qemu through its PVH entry point: under TCG the
# bzImage's own XZ decompressor takes 5+ seconds at every boot.
VMLINUX=$KDIR/vmlinux
KERNEL=$VMLINUX
# The initramfs is named after a hash of what goes into it (this script, /init, the module list),
# so every clone with the same Tests/vm shares one image and an edited one gets a new image.
FORMAT=$( { cat "$HERE/prepare.sh" "$HERE/init"; sha256sum <"$BUSYBOX"; } | sha256sum | cut -c1-12)
INITRD=$KDIR/initramfs-$FORMAT.cpio.gz

print_result() {
    if ((PRINT_ENV)); then
        printf 'KVER=%q\nKERNEL=%q\nINITRD=%q\n' "$KVER" "$KERNEL" "$INITRD"
    else
        echo "camrec-vm: kernel $KERNEL initramfs $INITRD"
    fi
}

if ((!FORCE)) && [[ -s $INITRD && -s $KERNEL ]]; then
    [[ $(cat "$CACHE/current" 2>/dev/null) == "$pkg" ]] || echo "$pkg" >"$CACHE/current"
    [[ -n $(find "$CACHE/current" -mmin -1440) ]] || touch "$CACHE/current"
    print_result
    exit 0
fi

mkdir -p "$KDIR"
if [[ ! -s $BZIMAGE || ! -f $ROOT/.unpacked ]]; then
    deb=$(ls "$KDIR"/"$pkg"_*.deb 2>/dev/null | head -1 || true)
    if [[ -z $deb ]]; then
        log "downloading $pkg"
        tmpd=$(mktemp -d "$KDIR/dl.XXXXXX")
        # apt-get download writes to the cwd; as root it warns about the _apt sandbox.
        (cd "$tmpd" && apt-get -qq -o APT::Sandbox::User=root download "$pkg") >"$KDIR/download.log" 2>&1 ||
            { rm -rf "$tmpd"; die "apt-get download $pkg failed; see $KDIR/download.log"; }
        mv "$tmpd"/*.deb "$KDIR"/ && rmdir "$tmpd"
        deb=$(ls "$KDIR"/"$pkg"_*.deb | head -1)
    fi
    log "unpacking $deb"
    rm -rf "$ROOT"
    dpkg -x "$deb" "$ROOT"
    touch "$ROOT/.unpacked"
    rm -f "$deb"    # 70 MB; the unpacked tree is all we use
fi
[[ -s $BZIMAGE ]] || die "no kernel image at $BZIMAGE"
if [[ ! -s $VMLINUX ]]; then
    # Find the compressed payload in the bzImage by its magic and unpack it (what the kernel's
    # scripts/extract-vmlinux does). xz/zstd/gzip complain about the trailing bytes: ignore.
    for fmt in 'xz:\xfd7zXZ' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
        tool=${fmt%%:*}
        command -v "$tool" >/dev/null || continue
        for off in $(LC_ALL=C grep -obUa "$(printf "${fmt#*:}")" "$BZIMAGE" 2>/dev/null | cut -d: -f1 | head -5); do
            tail -c +$((off + 1)) "$BZIMAGE" | "$tool" -dc >"$VMLINUX.tmp" 2>/dev/null || true
            if [[ $(head -c4 "$VMLINUX.tmp" 2>/dev/null) == $'\x7fELF' ]]; then
                mv -f "$VMLINUX.tmp" "$VMLINUX"; break 2
            fi
        done
    done
    rm -f "$VMLINUX.tmp"
    # Without PVH support (its ELF note) qemu can't boot the ELF: use the bzImage then.
    if [[ -s $VMLINUX ]] && ! grep -q '^CONFIG_PVH=y' "$ROOT/boot/config-$KVER"; then
        rm -f "$VMLINUX"
    fi
    [[ -s $VMLINUX ]] || ln -sf "$BZIMAGE" "$VMLINUX"
fi
if [[ ! -s $ROOT/lib/modules/$KVER/modules.dep.bin ]]; then
    depmod -b "$ROOT" "$KVER"
fi

# 3. insmod order. --show-depends prints "insmod /path/x.ko [params]" lines in load order,
#    and "builtin x" for built-in modules.
order=()
declare -A seen=()
for m in "${MODULES[@]}"; do
    out=$(modprobe -d "$ROOT" -S "$KVER" --show-depends "$m" 2>&1) ||
        die "modprobe --show-depends $m failed: $out"
    while read -r kind path _; do
        [[ $kind == insmod ]] || continue
        path=${path#"$ROOT"}
        [[ -n ${seen[$path]:-} ]] && continue
        seen[$path]=1
        order+=("$path")
    done <<<"$out"
done
log "modules: ${order[*]##*/}"

# 4. The initramfs.
stage=$(mktemp -d "$KDIR/initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,proc,sys,dev,host,ctl,rw,modules,etc}
cp "$BUSYBOX" "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"   # /init installs the other applets
: >"$stage/modules/order"
for p in "${order[@]}"; do
    name=${p##*/}
    # Debian ships .ko.xz on newer kernels; busybox insmod can't read compressed modules.
    case $name in
        *.ko) cp "$ROOT$p" "$stage/modules/$name" ;;
        *.ko.xz) xz -dc "$ROOT$p" >"$stage/modules/${name%.xz}"; name=${name%.xz} ;;
        *.ko.zst) zstd -qdc "$ROOT$p" >"$stage/modules/${name%.zst}"; name=${name%.zst} ;;
        *.ko.gz) gzip -dc "$ROOT$p" >"$stage/modules/${name%.gz}"; name=${name%.gz} ;;
        *) die "unexpected module file $p" ;;
    esac
    echo "$name" >>"$stage/modules/order"
done
install -m 0755 "$HERE/init" "$stage/init"
echo "$KVER" >"$stage/etc/kver"
(cd "$stage" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) |
    gzip -1 >"$INITRD.tmp"
mv -f "$INITRD.tmp" "$INITRD"
echo "$pkg" >"$CACHE/current"
# Drop initramfs images of older formats.
# Images of other versions are kept (another clone may use them); drop ones unused for 30 days.
find "$KDIR" -maxdepth 1 -name 'initramfs-*.cpio.gz' -atime +30 -delete 2>/dev/null || true
print_result
