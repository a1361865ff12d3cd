#!/bin/bash
# scripts/package.sh [--out DIR]: builds camrec_VERSION_ARCH.deb from this checkout into DIR (default dist/).
#
# The package holds the release binary with the Swift runtime and Foundation linked in
# (--static-swift-stdlib: it needs no Swift toolchain, only Debian libraries, whose versions
# dpkg-shlibdeps reads from the binary), man pages for camrec and each subcommand generated from the
# argument parser (its generate-manual tool, so they never drift from --help), bash, zsh and fish
# completions from --generate-completion-script, the udev rule for stable camera names, the systemd
# unit camrec@.service (installed, never enabled or started), examples (the autostart rule, the morning
# timer, a crontab line), the copyright file and the changelog. Maintainer scripts:
# packaging/debian/. The build goes to .build-package/ (the tests' .build/ is left alone); about
# 8 minutes from nothing on a 2-core machine.
#
# Needs, beyond the Swift toolchain: dpkg-dev (dpkg-shlibdeps), binutils (strip). scripts/setup.sh
# --package installs them. scripts/check-package.sh installs the result in a clean Debian 12 root.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

out=dist
while (($#)); do
    case $1 in
        --out) [[ $# -ge 2 && -n $2 ]] || { echo "package.sh: --out needs a directory" >&2; exit 64; }
               out=$2; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "package.sh: unknown argument $1 (use --out DIR)" >&2; exit 64 ;;
    esac
done
for tool in swift dpkg-deb dpkg-shlibdeps strip gzip; do
    command -v "$tool" >/dev/null || { echo "package.sh: $tool is missing; run scripts/setup.sh --package as root" >&2; exit 69; }
done

version=$(sed -n 's/.*"camrec \([0-9][0-9.]*\) (commit.*/\1/p' Sources/camrec/Camrec.swift)
[[ -n $version ]] || { echo "package.sh: no version in Sources/camrec/Camrec.swift" >&2; exit 70; }
arch=$(dpkg --print-architecture)
scratch=$PWD/.build-package

echo "== camrec $version for $arch: the release binary, Swift runtime linked in"
quietly() {   # a build's output goes to a log; its last lines are shown when it fails
    local log=$1; shift
    mkdir -p "$scratch"
    "$@" >"$log" 2>&1 || { tail -n 30 "$log" >&2; echo "package.sh: $* failed (the whole log: $log)" >&2; exit 70; }
    grep -E '^Build .*complete' "$log" | tail -n 1
}
# The runtime's link arguments export every symbol of camrec's own objects (-export-dynamic: 1.8 MiB of
# .dynsym/.dynstr/.gnu.hash, read at every start); nothing looks camrec's symbols up, so they stay local.
# Every function in a section of its own (Swift and C, dependencies too), laid out in the order of
# packaging/camrec.order (scripts/code-order.sh): the code a recording runs lies together instead of in
# ~140 of the 64 KiB blocks the kernel maps at a time, and functions nothing calls are left out.
quietly "$scratch/camrec-build.log" swift build -c release --static-swift-stdlib -Xlinker --no-export-dynamic \
    -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
    -Xlinker --symbol-ordering-file="$PWD/packaging/camrec.order" -Xlinker --no-warn-symbol-ordering \
    --scratch-path "$scratch" --product camrec
bin=$scratch/release/camrec
[[ -x $bin ]] || { echo "package.sh: the build made no $bin" >&2; exit 70; }
if ldd "$bin" | grep -q 'libswift\|libFoundation\|lib_Foundation\|libdispatch'; then
    echo "package.sh: $bin still links the Swift runtime dynamically:" >&2; ldd "$bin" | grep swift >&2; exit 70
fi

echo "== generate-manual (swift-argument-parser's own tool, at the version Package.resolved pins)"
parser=$scratch/checkouts/swift-argument-parser
quietly "$scratch/tools-build.log" swift build -c release --package-path "$parser" --scratch-path "$scratch/tools" --product generate-manual
generate_manual=$scratch/tools/release/generate-manual

root=$(mktemp -d /tmp/camrec-package.XXXXXX)
trap 'rm -rf "$root"' EXIT
install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" "$root/usr/share/doc/camrec/examples" \
    "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d" "$root/lib/udev/rules.d" "$root/lib/systemd/system"
install -m 0755 "$bin" "$root/usr/bin/camrec"
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$root/usr/bin/camrec"

# Man pages, one per subcommand, dated by the last commit so a rebuild of the same commit is the same.
date=$(git log -1 --format=%cd --date=format:%Y-%m-%d 2>/dev/null || date +%Y-%m-%d)
"$generate_manual" --multi-page --date "$date" --section 1 --authors "the camrec developers<camrec@localhost.invalid>" \
    --output-directory "$root/usr/share/man/man1" "$root/usr/bin/camrec"
# Subcommand pages under Debian's names (camrec-receive(1), as git-commit(1)), so `man camrec-receive`
# and whatis find them; the synopsis still says "camrec receive". Blank lines, which groff warns of,
# become paragraph breaks. .Nd takes the rest of its line as the description: generate-manual quotes it as a
# macro argument, and mandb (whatis, man -k) keeps those quotes, so they go. The page of the parser's own
# `help` subcommand says nothing.
rm -f "$root/usr/share/man/man1/camrec.help.1"
for page in "$root"/usr/share/man/man1/*.1; do
    awk -v base="$(basename "$page" .1)" '
        BEGIN { n = split(base, part, "."); sub_ = (n > 1) ? part[2] : "" }
        sub_ != "" && /^\.Dt / { print ".Dt CAMREC-" toupper(sub_) " 1"; next }
        sub_ != "" && $0 == ".Nm \"camrec " sub_ "\"" { print ".Nm camrec-" sub_; named = 1; next }
        sub_ != "" && named && $0 == ".Nm" { print ".Nm camrec " sub_; named = 0; next }
        /^\.Nd ".*"$/ { print ".Nd " substr($0, 6, length($0) - 6); next }
        /^$/ { print ".Pp"; next }
        { print }' "$page" >"$page.new"
    target=$(basename "$page" .1 | tr . -).1
    rm -f "$page"
    mv "$page.new" "$root/usr/share/man/man1/$target"
done
pages=$(find "$root/usr/share/man/man1" -name '*.1' | wc -l)
((pages >= 2)) || { echo "package.sh: generate-manual wrote $pages pages" >&2; exit 70; }
gzip -9n "$root"/usr/share/man/man1/*.1

# bash-completion sources the file: no #! line (lintian's bash-completion-with-hashbang).
"$root/usr/bin/camrec" --generate-completion-script bash | sed '1{/^#!/d}' >"$root/usr/share/bash-completion/completions/camrec"
"$root/usr/bin/camrec" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_camrec"
"$root/usr/bin/camrec" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/camrec.fish"

# The unit and the examples name the packaged binary; the "cp … /etc/systemd/system" install notes are
# for a source checkout.
packaged() { sed -e 's#/usr/local/bin/camrec#/usr/bin/camrec#g' -e '/^#   cp /d' -e '/^# Install: cp /d' "$1"; }
packaged udev/70-camrec.rules >"$root/lib/udev/rules.d/70-camrec.rules"
packaged systemd/camrec@.service >"$root/lib/systemd/system/camrec@.service"
for f in udev/71-camrec-autostart.rules systemd/camrec-morning.service systemd/camrec-morning.timer; do
    packaged "$f" >"$root/usr/share/doc/camrec/examples/$(basename "$f")"
done
{
    echo "# A one-minute clip every morning (crontab -e as a user in the video group; cron needs % as \\%)."
    sed -n '/^0 7 \* \* \* /p' docs/UNATTENDED.md | sed 's#/usr/local/bin/camrec#/usr/bin/camrec#'
} >"$root/usr/share/doc/camrec/examples/crontab"
grep -q camrec "$root/usr/share/doc/camrec/examples/crontab" || { echo "package.sh: no crontab line in docs/UNATTENDED.md" >&2; exit 70; }

packages=$(python3 - <<'EOF'
import json
for pin in json.load(open("Package.resolved"))["pins"]:
    print(f" {pin['identity']} {pin['state'].get('version') or pin['state'].get('revision', '')[:12]} ({pin['location']})")
EOF
)
awk -v p="$packages" '{ if ($0 == "@PACKAGES@") print p; else print }' packaging/debian/copyright.in >"$root/usr/share/doc/camrec/copyright"
gzip -9n <packaging/debian/changelog >"$root/usr/share/doc/camrec/changelog.gz"
find "$root" -type d -exec chmod 0755 {} +
find "$root/usr/share" "$root/lib" -type f -exec chmod 0644 {} +

# Dependencies as dpkg-shlibdeps reads them from the binary (it wants a debian/control to stand in).
shlibs=$(mktemp -d /tmp/camrec-shlibs.XXXXXX)
mkdir "$shlibs/debian"
printf 'Source: camrec\n\nPackage: camrec\nArchitecture: any\n' >"$shlibs/debian/control"
depends=$(cd "$shlibs" && dpkg-shlibdeps -O "$root/usr/bin/camrec" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
rm -rf "$shlibs"
[[ -n $depends ]] || { echo "package.sh: dpkg-shlibdeps found no dependencies" >&2; exit 70; }
# camrec opens libavcodec, libavformat, libavutil, libswresample, libva, libx265, libasound, libjpeg and
# libv4lconvert when it first needs them (dlopen, by the names in Sources/CFFmpeg/LazyLibav.c,
# Sources/CX265/CX265.c, Sources/CALSA/LazyALSA.c, Sources/CJPEG/LazyJPEG.c and Sources/CV4L2/CV4L2.c), so
# dpkg-shlibdeps cannot see them (libjpeg only through libyuv0's own Depends):
# the packages that hold those files, at least at the upstream version built against. GStreamer (WebRTC, opened
# the same way by Sources/CGStreamer) is optional: control.in recommends it.
for soname in $(strings "$root/usr/bin/camrec" | grep -xE 'lib(av(codec|format|util)|swresample|x265|asound|jpeg|va|v4lconvert)\.so\.[0-9]+' | sort -u); do
  # awk reads to the end: leaving early would end ldconfig with SIGPIPE, which pipefail and set -e turn
  # into package.sh's exit status 141 (seen once on a machine with the test packages installed).
  file=$(ldconfig -p | awk -v n="$soname" '$1 == n && !found { print $NF; found = 1 }')
  owner=$( [[ -n $file ]] && dpkg -S "$(readlink -f "$file")" 2>/dev/null | awk -F: 'NR == 1 { print $1 }')
  [[ -n $owner ]] || { echo "package.sh: no Debian package holds $soname, which camrec opens" >&2; exit 70; }
  lib_version=$(dpkg-query -W -f='${Version}' "$owner" | sed -E 's/^([0-9]+:)?([0-9]+\.[0-9]+).*/\1\2/')
  depends+=", $owner (>= $lib_version)"
done
[[ $depends == *libavcodec* && $depends == *libavformat* && $depends == *libavutil* && $depends == *libswresample* &&
   $depends == *libx265* && $depends == *libasound2* && $depends == *libjpeg62-turbo* && $depends == *libva2* &&
   $depends == *libv4lconvert0* ]] ||
  { echo "package.sh: Depends lacks a library camrec opens (libav*, libswresample, libx265, libasound2, libjpeg62-turbo, libva2, libv4lconvert0): $depends" >&2; exit 70; }

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
    packaging/debian/control.in >"$root/DEBIAN/control"
install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$root/DEBIAN/"
(cd "$root" && find usr lib -type f -exec md5sum {} + | sort -k 2) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control"

mkdir -p "$out"
deb=$out/camrec_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
bytes=$(stat -c %s "$deb")
echo "== $deb: $((bytes / 1024)) KiB, $pages man pages; Depends: $depends"
((bytes < 30 * 1024 * 1024)) || { echo "package.sh: $deb is over 30 MB" >&2; exit 70; }
