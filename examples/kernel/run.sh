# A cargo runner (docs/kernel.md, step 5): cargo runs `sh run.sh KERNEL`,
# KERNEL being the ELF it re-creates on every build; .ksym is filled in a
# copy, which boots.
set -e
k=$1
shift
nm -n "$k" | ksym-filter | ksym-pack --format v2 --lines "$k" --patch-elf "$k" -o "$k.ksym"
exec qemu-system-riscv64 -machine virt -nographic -kernel "$k.ksym" "$@"
