# A cargo runner for a bootloader tool (docs/kernel.md, step 5): .ksym is
# filled in a copy of the ELF cargo made, and bootimage, itself a runner,
# builds the disk image from the copy and boots it.
set -e
k=$1
shift
nm -n "$k" | ksym-filter | ksym-pack --format v2 --lines "$k" --patch-elf "$k" -o "$k.ksym"
exec bootimage runner "$k.ksym" "$@"
