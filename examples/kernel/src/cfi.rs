//! The panic path's frame walk by DWARF CFI (feature `cfi-unwind`), as
//! DragonOS, Asterinas and Alien walk theirs: the `unwinding` crate reads
//! `.eh_frame` (kept by linker.ld as `__eh_frame`, with `__executable_start`
//! and `__etext` around the text), built with `-C force-unwind-tables=yes`.
//! Frame pointers are not needed for it; each return address goes to the
//! same printer as the frame-record walk's.

use core::ffi::c_void;
use unwinding::abi::{
    _Unwind_Backtrace, _Unwind_GetCFA, _Unwind_GetIP, UnwindContext, UnwindReasonCode,
};

/// Calls `each` with the return address of every frame whose stack
/// pointer is above `above` (an address in the frame the walk starts
/// above), innermost first, at most `max`; stops where `.eh_frame` has no
/// entry (the entry code, written in assembly).
pub fn walk(above: usize, max: usize, each: &mut dyn FnMut(usize)) {
    struct Walk<'a> {
        above: usize,
        left: usize,
        each: &'a mut dyn FnMut(usize),
    }
    extern "C" fn frame(ctx: &UnwindContext<'_>, arg: *mut c_void) -> UnwindReasonCode {
        // SAFETY: `arg` is the `Walk` below, alive for the whole call of
        // _Unwind_Backtrace, which calls this on the same thread.
        let w = unsafe { &mut *arg.cast::<Walk<'_>>() };
        let ip = _Unwind_GetIP(ctx);
        if ip == 0 || w.left == 0 {
            return UnwindReasonCode::END_OF_STACK;
        }
        // The unwinding crate's "CFA" is the stack pointer of the frame
        // `ip` returns into.
        if _Unwind_GetCFA(ctx) <= w.above {
            return UnwindReasonCode::NO_REASON;
        }
        w.left -= 1;
        (w.each)(ip);
        UnwindReasonCode::NO_REASON
    }
    let mut w = Walk {
        above,
        left: max,
        each,
    };
    // The result says why the walk ended, which the printed frames show.
    let _ = _Unwind_Backtrace(frame, (&raw mut w).cast());
}
