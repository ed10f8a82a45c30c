//! Transparent huge pages for malloc's heap, for the packing jobs that read
//! DWARF (docs/packing.md, "The heap"). Their work is millions of small
//! allocations (addr2line's parsed units, the sweep's rows and maps) whose
//! first touch, one 4 KiB page fault at a time, was 15 % of
//! `ksym-pack --elf --lines` on libstdc++. glibc backs its heap with 2 MiB
//! pages when its tunables say so (`glibc.malloc.hugetlb=1`, which a
//! process cannot set for itself: glibc reads `GLIBC_TUNABLES` once, at
//! start) and grows the heap in steps large enough to hold them
//! (`glibc.malloc.top_pad`). So the job starts itself again, once, with
//! them: libstdc++ 12 packs in 0.83–0.88× the wall time (two runs of 9
//! and 11) at 55 MiB peak instead of 47, the Rust bench binary in 0.91× at
//! 134 MiB instead of 126.

/// The tunables a DWARF job runs with: huge pages for the heap, which
/// grows 16 MiB at a time (64 MiB gained little more and cost 46 % more
/// peak memory on the Rust binary).
pub const TUNABLES: &str = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=16777216";

/// Starts this program again (`/proc/self/exe`, the same arguments, the
/// same argv[0]) with [`TUNABLES`] in `GLIBC_TUNABLES`, and does not
/// return when that works. Returns at once when `GLIBC_TUNABLES` is set at
/// all (the user's choice, an empty value included, or this function's
/// own second run), off Linux with glibc, or when the exec fails (no
/// `/proc`): the job then runs here, with glibc's defaults. Nothing has
/// been read from stdin yet, so the new process reads all of it.
pub fn use_huge_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os("GLIBC_TUNABLES").is_some() {
            return;
        }
        let mut args = std::env::args_os();
        let Some(arg0) = args.next() else { return };
        // Only returns on failure; the job then goes on in this process.
        let _ = std::process::Command::new("/proc/self/exe")
            .arg0(arg0)
            .args(args)
            .env("GLIBC_TUNABLES", TUNABLES)
            .exec();
    }
}

/// Whether this process runs with [`TUNABLES`] (as [`use_huge_pages`]
/// starts it), for `-v`.
pub fn huge_pages_in_effect() -> bool {
    cfg!(all(target_os = "linux", target_env = "gnu"))
        && std::env::var_os("GLIBC_TUNABLES").is_some_and(|v| v == TUNABLES)
}
