#!/usr/bin/env bash
# The Debian package (docs/development.md "Packages"): renders the man pages and shell
# completions from the tools' command lines (examples/gen-docs.rs) into
# target/assets, then builds target/debian/ksym_VERSION_amd64.deb with
# `cargo deb --profile dist` (stripped binaries; Cargo.toml's
# [package.metadata.deb] lists what goes where).
#   bash scripts/package.sh             build the .deb; prints its path
#   KSYM_DEB_CHECK=1 bash scripts/package.sh
#                                       also, as root: lintian, install it
#                                       with dpkg -i, run the main job from
#                                       /usr/bin and `man -l` a page, remove it
# Installs cargo-deb (cargo install) and, for the check, lintian and man-db
# when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo-deb >/dev/null || cargo install cargo-deb --locked --quiet
cargo run --release --quiet --example gen-docs -- target/assets
deb=$(cargo deb --profile dist --quiet | tail -1)
[ -f "$deb" ] || { echo "package: cargo deb wrote no package" >&2; exit 1; }
echo "$deb"
[ "${KSYM_DEB_CHECK:-}" = 1 ] || exit 0

need=()
command -v lintian >/dev/null || need+=(lintian)
command -v man >/dev/null || need+=(man-db)
if [ ${#need[@]} -gt 0 ]; then
    apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; }
fi
echo "== dpkg -c"
dpkg -c "$deb"
echo "== lintian"
# Findings are printed, not fatal: docs/development.md "Packages" says which remain.
lintian --no-tag-display-limit "$deb" || true

echo "== dpkg -i, the main job from /usr/bin, man -l, dpkg -r"
dpkg -i "$deb" >/dev/null
trap 'dpkg -r ksym >/dev/null' EXIT
tmp=$(mktemp -d)
xz -dc tests/data/System.map-6.1.0-56-sample.xz > "$tmp/System.map"
/usr/bin/ksym-filter "$tmp/System.map" > "$tmp/syms"
/usr/bin/ksym-pack --format v2 -o "$tmp/k.bin" "$tmp/syms"
/usr/bin/ksym-pack --check "$tmp/k.bin"
addr=$(awk 'NR == 100 { print $1 }' "$tmp/syms")
echo "$addr" | /usr/bin/ksym-resolve "$tmp/k.bin"
/usr/bin/ksym-resolve --version
MANWIDTH=80 man -l /usr/share/man/man1/ksym-resolve.1.gz | head -20
for f in /usr/share/man/man1/ksym-{filter,tokens,pack,resolve}.1.gz /usr/share/man/man5/ksym.5.gz \
    /usr/share/bash-completion/completions/ksym-resolve /usr/share/zsh/vendor-completions/_ksym-pack \
    /usr/share/fish/vendor_completions.d/ksym-filter.fish /usr/share/doc/ksym/FORMAT.md; do
    [ -f "$f" ] || { echo "package: $f not installed" >&2; exit 1; }
done
rm -rf "$tmp"
echo "package: ok"
