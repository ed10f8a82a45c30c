#!/usr/bin/env bash
# Boots Debian's 6.1 amd64 kernel under QEMU (TCG, no KVM) with a busybox
# initramfs, loads four test modules built against Debian's headers
# (tests/data/oops: BUG() and WARN() and a NULL dereference in .text, a
# NULL dereference in .init.text) and leaves the console in OUT/console.txt,
# the modules in OUT/modules/, and Linux 6.1's scripts/decode_stacktrace.sh
# and scripts/decodecode (from Debian's linux-source-6.1, fetched once into
# target/linux-6.1-scripts) in OUT/scripts/. Installs what it needs as root
# (linux-image-6.1.0-56-amd64-unsigned, linux-headers-6.1.0-56-amd64,
# busybox-static, qemu-system-x86, cpio); exit 77 when it cannot.
#   scripts/qemu-oops.sh [OUT]      (default target/qemu-oops)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/qemu-oops}
REL=6.1.0-56-amd64
KERNEL=/boot/vmlinuz-$REL
HEADERS=/usr/src/linux-headers-$REL

need=()
[ -f "$KERNEL" ] || need+=(linux-image-$REL-unsigned)
[ -d "$HEADERS" ] || need+=(linux-headers-$REL)
[ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx insmod || need+=(busybox-static)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v cpio >/dev/null || need+=(cpio)
command -v make >/dev/null || need+=(make)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "qemu-oops: needs ${need[*]} (apt-get install, as root)" >&2
        exit 77
    fi
    export DEBIAN_FRONTEND=noninteractive
    # One at a time: Debian's qemu packages and this image's newer
    # qemu-utils cannot be resolved in one transaction.
    for p in "${need[@]}"; do
        apt-get install -y -qq "$p" >/dev/null 2>&1 ||
            { apt-get update -qq && apt-get install -y -qq "$p" >/dev/null; }
    done
fi

rm -rf "$OUT"
mkdir -p "$OUT/build" "$OUT/modules" "$OUT/root/bin" "$OUT/root/proc" "$OUT/root/sys" "$OUT/root/dev"
cp tests/data/oops/* "$OUT/build/"
make -s -C "$HEADERS" M="$(realpath "$OUT/build")" modules 2>&1 | grep -v "Skipping BTF" >&2 || true
cp "$OUT"/build/*.ko "$OUT/modules/"
cp "$OUT"/modules/*.ko "$OUT/root/"
cp /bin/busybox "$OUT/root/bin/busybox"
cat > "$OUT/root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
echo 8 > /proc/sys/kernel/printk
for m in warn bug null initnull; do
    echo "ksym-qemu-oops: insmod ksym_oops_$m"
    /bin/busybox insmod /ksym_oops_$m.ko
    /bin/busybox sleep 1
done
echo "ksym-qemu-oops: done"
echo o > /proc/sysrq-trigger
/bin/busybox sleep 30
EOF
chmod +x "$OUT/root/init"
(cd "$OUT/root" && find . | cpio -o -H newc --quiet | gzip -1 > ../initramfs.gz)

# TCG boots this kernel in a few seconds; the time limit bounds a hang.
timeout 180 qemu-system-x86_64 -machine q35 -accel tcg -cpu max -m 512M -smp 1 \
    -nographic -no-reboot -kernel "$KERNEL" -initrd "$OUT/initramfs.gz" \
    -append "console=ttyS0 panic=-1 loglevel=8 printk.time=1" \
    < /dev/null > "$OUT/console.raw" 2>&1 || true
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
echo "qemu-oops: $(grep -c 'Call Trace:' "$OUT/console.txt") call traces in $OUT/console.txt" >&2
