#!/usr/bin/env bash
# Boots Debian's 6.1 kernel under QEMU (TCG, no KVM) with a busybox
# initramfs, loads four test modules built against Debian's headers
# (tests/data/oops: BUG() and WARN() and a NULL dereference in .text, a
# NULL dereference in .init.text), on amd64 after a user-space program
# that faults (tests/data/segv.c, static-pie), and leaves in OUT:
#   console.txt   the console (for arm64 also the guest's /proc/kallsyms text
#                 symbols between `ksym-qemu-oops: kallsyms` and `done`:
#                 Debian's arm64 System.map is a placeholder);
#   modules/      the modules, with DWARF;
#   build/segv    (amd64) the faulting program, with DWARF;
#   scripts/      Linux 6.1's decode_stacktrace.sh and decodecode (from
#                 Debian's linux-source-6.1, fetched once into
#                 target/linux-6.1-scripts).
# KSYM_ARCH is x86_64 (default) or arm64; arm64 modules are cross-built
# (gcc-aarch64-linux-gnu) against the arm64 headers with the host's kbuild
# tools, its kernel, headers and busybox fetched once into target/arm64-debs.
# Installs what it needs as root; exit 77 when it cannot.
#   KSYM_ARCH=arm64 scripts/qemu-oops.sh [OUT]      (default target/qemu-oops-ARCH)
set -euo pipefail
cd "$(dirname "$0")/.."
ARCH=${KSYM_ARCH:-x86_64}
OUT=${1:-target/qemu-oops-$ARCH}
V=6.1.0-56

need=()
case $ARCH in
    x86_64)
        [ -f /boot/vmlinuz-$V-amd64 ] || need+=(linux-image-$V-amd64-unsigned)
        [ -d /usr/src/linux-headers-$V-amd64 ] || need+=(linux-headers-$V-amd64)
        command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
        { [ -x /bin/busybox ] && /bin/busybox --list | grep -qx insmod; } || need+=(busybox-static)
        ;;
    arm64)
        [ -d /usr/src/linux-headers-$V-common ] || need+=(linux-headers-$V-common)
        [ -d /usr/lib/linux-kbuild-6.1 ] || need+=(linux-kbuild-6.1)
        command -v qemu-system-aarch64 >/dev/null || need+=(qemu-system-arm)
        command -v aarch64-linux-gnu-gcc-12 >/dev/null || need+=(gcc-aarch64-linux-gnu)
        command -v aarch64-linux-gnu-objdump >/dev/null || need+=(binutils-aarch64-linux-gnu)
        ;;
    *) echo "qemu-oops: KSYM_ARCH is x86_64 or arm64, not $ARCH" >&2; exit 2 ;;
esac
command -v cpio >/dev/null || need+=(cpio)
command -v make >/dev/null || need+=(make)
if [ ${#need[@]} -gt 0 ] || { [ "$ARCH" = arm64 ] && [ ! -d target/arm64-debs/img ]; }; then
    if [ "$(id -u)" != 0 ]; then
        echo "qemu-oops: needs ${need[*]:-arm64 packages} (apt-get, as root)" >&2
        exit 77
    fi
fi
export DEBIAN_FRONTEND=noninteractive
# One at a time, QEMU in the release of the machine's own qemu-utils
# (scripts/apt-qemu.sh).
for p in "${need[@]}"; do
    case $p in
        qemu-system-*) bash scripts/apt-qemu.sh "$p"; continue ;;
    esac
    apt-get install -y -qq "$p" >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq "$p" >/dev/null; } || {
        case $p in
            *$V*) echo "qemu-oops: $p is in Debian's bookworm-security; add" \
                "'deb http://deb.debian.org/debian-security bookworm-security main'" \
                "to apt's sources" >&2 ;;
        esac
        exit 1
    }
done

rm -rf "$OUT"
mkdir -p "$OUT/build" "$OUT/modules" "$OUT/root/bin" "$OUT/root/proc" "$OUT/root/sys"
cp tests/data/oops/* "$OUT/build/"
build=$(realpath "$OUT/build")
if [ "$ARCH" = x86_64 ]; then
    make -s -C /usr/src/linux-headers-$V-amd64 M="$build" modules 2>&1 | grep -v "Skipping BTF" >&2 || true
    cp /bin/busybox "$OUT/root/bin/busybox"
    # A user-space fault too: the kernel's `segfault at … in segv[…]` line.
    cc -static-pie -O2 -g -o "$OUT/build/segv" tests/data/segv.c
    cp "$OUT/build/segv" "$OUT/root/segv"
    KERNEL=/boot/vmlinuz-$V-amd64
else
    D=target/arm64-debs
    if [ ! -d "$D/img" ]; then
        mkdir -p "$D"
        dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
        apt-get update -qq
        (cd "$D" && apt-get download linux-image-$V-arm64-unsigned:arm64 \
            linux-headers-$V-arm64:arm64 busybox-static:arm64 >/dev/null 2>&1)
        for p in img:linux-image hdr:linux-headers bb:busybox-static; do
            dpkg-deb -x "$D"/${p#*:}*_arm64.deb "$D/${p%%:*}"
        done
        # The headers' kbuild tools are host programs: the host's serve.
        mkdir -p "$D/hdr/usr/lib"
        ln -sfn /usr/lib/linux-kbuild-6.1 "$D/hdr/usr/lib/linux-kbuild-6.1"
        ln -sfn /usr/src/linux-headers-$V-common "$D/hdr/usr/src/linux-headers-$V-common"
    fi
    make -s -C "$D/hdr/usr/src/linux-headers-$V-arm64" M="$build" DEB_BUILD_ARCH=amd64 \
        DEB_HOST_ARCH=arm64 DEB_HOST_GNU_TYPE=aarch64-linux-gnu modules 2>&1 |
        grep -v "Skipping BTF" >&2 || true
    cp "$D/bb/bin/busybox" "$OUT/root/bin/busybox"
    KERNEL=$D/img/boot/vmlinuz-$V-arm64
fi
cp "$OUT"/build/*.ko "$OUT/modules/"
cp "$OUT"/modules/*.ko "$OUT/root/"
cat > "$OUT/root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
echo 8 > /proc/sys/kernel/printk
[ -x /segv ] && /segv
for m in warn bug null initnull; do
    echo "ksym-qemu-oops: insmod ksym_oops_$m"
    /bin/busybox insmod /ksym_oops_$m.ko
    /bin/busybox sleep 1
done
if [ "$(/bin/busybox uname -m)" = aarch64 ]; then
    echo "ksym-qemu-oops: kallsyms"
    /bin/busybox grep -E '^[0-9a-f]+ [tTW] ' /proc/kallsyms
fi
echo "ksym-qemu-oops: done"
echo o > /proc/sysrq-trigger
/bin/busybox sleep 30
INIT
chmod +x "$OUT/root/init"
(cd "$OUT/root" && find . | cpio -o -H newc --quiet | gzip -1 > ../initramfs.gz)

# TCG boots these kernels in seconds; the time limit bounds a hang.
if [ "$ARCH" = x86_64 ]; then
    qemu=(qemu-system-x86_64 -machine q35 -accel tcg -cpu max -m 512M -smp 1)
    console=ttyS0
else
    qemu=(qemu-system-aarch64 -machine virt -accel tcg -cpu max -m 512M -smp 1)
    console=ttyAMA0
fi
timeout 300 "${qemu[@]}" -nographic -no-reboot -kernel "$KERNEL" -initrd "$OUT/initramfs.gz" \
    -append "console=$console panic=-1 loglevel=8" < /dev/null > "$OUT/console.raw" 2>&1 || true
tr -d '\r' < "$OUT/console.raw" > "$OUT/console.txt"

# The reference decoders, from the kernel's own source package.
SCRIPTS=target/linux-6.1-scripts
if [ ! -f "$SCRIPTS/decode_stacktrace.sh" ]; then
    mkdir -p "$SCRIPTS/dl"
    (cd "$SCRIPTS/dl" && { apt-get download linux-source-6.1 >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get download linux-source-6.1 >/dev/null; }; })
    dpkg-deb --fsys-tarfile "$SCRIPTS"/dl/linux-source-6.1_*.deb |
        tar -xO ./usr/src/linux-source-6.1.tar.xz | xz -dc |
        tar -x -C "$SCRIPTS/dl" linux-source-6.1/scripts/decode_stacktrace.sh linux-source-6.1/scripts/decodecode
    mv "$SCRIPTS"/dl/linux-source-6.1/scripts/* "$SCRIPTS/"
    rm -rf "$SCRIPTS/dl"
fi
mkdir -p "$OUT/scripts"
cp "$SCRIPTS"/decode_stacktrace.sh "$SCRIPTS"/decodecode "$OUT/scripts/"

grep -q "ksym-qemu-oops: done" "$OUT/console.txt" ||
    { echo "qemu-oops: the guest did not finish; console in $OUT/console.txt" >&2; exit 1; }
echo "qemu-oops: $ARCH: $(grep -c 'ksym-qemu-oops: insmod' "$OUT/console.txt") modules loaded, console in $OUT/console.txt" >&2
