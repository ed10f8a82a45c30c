//! C++ symbol names demangled by the system's libstdc++: `__cxa_demangle`
//! (the Itanium C++ ABI's demangler, GCC's libiberty inside), the one
//! perf and c++filt print with. Rust's `cpp_demangle` crate was tried and
//! set aside: on Debian's libstdc++ 12 its output differs from c++filt's in
//! the parameters or template arguments of 10 % of the names (dropped
//! parameters, `{unnamed type#1}` for `#2`), and a profile must not print
//! a function that does not exist.
//!
//! libstdc++.so.6 is loaded (`dlopen`) at the first C++ name, not linked:
//! linked, the dynamic loader relocated it at every start of `ksym-pack`
//! and `ksym-resolve` (1.6 M instructions, a third of `ksym-resolve`'s
//! fixed cost), though only packing a C++ binary demangles. Loaded by its file name, so no
//! `-dev` package is needed: every Debian system has it (apt links it).
//! Where it cannot be loaded, C++ names stay mangled.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::OnceLock;

/// Itanium C++ ABI §3.4 `abi::__cxa_demangle`: a `malloc`ed,
/// NUL-terminated demangling of `mangled`, or NULL with `*status`
/// non-zero.
type CxaDemangle = unsafe extern "C" fn(
    mangled: *const c_char,
    output: *mut c_char,
    length: *mut usize,
    status: *mut c_int,
) -> *mut c_char;

unsafe extern "C" {
    fn free(p: *mut c_void);
}

/// libstdc++'s `__cxa_demangle`, the library loaded once and kept for the
/// life of the process (so the pointer stays valid); `None` when it does
/// not load.
fn cxa_demangle() -> Option<CxaDemangle> {
    static LOADED: OnceLock<Option<(libloading::Library, CxaDemangle)>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            // SAFETY: loading libstdc++ runs its initialisers, as linking
            // it did at every start; the symbol has the C type above
            // (Itanium C++ ABI §3.4), and the library is never unloaded.
            unsafe {
                let lib = libloading::Library::new("libstdc++.so.6").ok()?;
                let f = *lib.get::<CxaDemangle>(b"__cxa_demangle\0").ok()?;
                Some((lib, f))
            }
        })
        .as_ref()
        .map(|&(_, f)| f)
}

/// The demangling of the Itanium C++ name `mangled` (`_Z…`, no symbol
/// version), parameters included, as c++filt prints it; `None` when it
/// is not a C++ name or holds a NUL.
pub fn demangle(mangled: &[u8]) -> Option<Vec<u8>> {
    if !mangled.starts_with(b"_Z") {
        return None;
    }
    let c = CString::new(mangled).ok()?;
    let cxa_demangle = cxa_demangle()?;
    let mut status: c_int = 0;
    // SAFETY: `c` is NUL-terminated and outlives the call; NULL output and
    // length ask the demangler to allocate; its result, when not NULL, is
    // a NUL-terminated malloc'ed string, copied and then freed once.
    unsafe {
        let out = cxa_demangle(
            c.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut status,
        );
        if out.is_null() {
            return None;
        }
        let text = (status == 0).then(|| CStr::from_ptr(out).to_bytes().to_vec());
        free(out.cast());
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names `cpp_demangle` 0.5.1 gets wrong, as c++filt prints them.
    #[test]
    fn names_are_demangled_as_cxxfilt_does() {
        assert_eq!(
            demangle(b"_ZNSbIwSt11char_traitsIwESaIwEEC1IPwEET_S5_RKS1_").unwrap(),
            b"std::basic_string<wchar_t, std::char_traits<wchar_t>, std::allocator<wchar_t> >::basic_string<wchar_t*>(wchar_t*, wchar_t*, std::allocator<wchar_t> const&)"
        );
        assert_eq!(
            demangle(b"_ZNSi4swapERSi").unwrap(),
            b"std::istream::swap(std::istream&)"
        );
        assert_eq!(demangle(b"_Z3foov").unwrap(), b"foo()");
        assert_eq!(demangle(b"main"), None);
        assert_eq!(demangle(b"_Znot a name"), None);
        assert_eq!(demangle(b"_Z3f\0oov"), None);
    }
}
