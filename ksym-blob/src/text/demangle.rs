//! Rust symbol demangling for `ksym-filter`: legacy (`_ZN…17h<hash>E`) and v0
//! (`_R…`) names become what `rustc_demangle`'s alternate form (`{:#}`)
//! prints: no hash, no crate disambiguators. C and C++ names stay byte for byte.

use std::io::Write;

/// Appends the demangled form of `name` to `out` and returns true, when `name`
/// is a Rust mangled name; leaves `out` alone and returns false otherwise
/// (C, C++, already demangled, or not valid UTF-8).
///
/// Legacy `_ZN` names count as Rust only with the `17h<16 hex digits>E` hash
/// rustc appends, so C++ names such as `_ZN3foo3barEv` are never touched.
pub fn demangle_rust(name: &[u8], out: &mut Vec<u8>) -> bool {
    let Ok(s) = std::str::from_utf8(name) else {
        return false;
    };
    let body = if s.starts_with("__") { &s[1..] } else { s }; // Mach-O adds one more '_'
    let rust = if body.starts_with("_R") {
        true
    } else if body.starts_with("_ZN") {
        has_legacy_hash(body)
    } else {
        false
    };
    if !rust {
        return false;
    }
    let Ok(d) = rustc_demangle::try_demangle(s) else {
        return false;
    };
    let start = out.len();
    // Display fails past rustc-demangle's size and recursion limits.
    if write!(out, "{d:#}").is_err() {
        out.truncate(start);
        return false;
    }
    true
}

/// `name` as `ksym-filter` writes it: demangled when it is a Rust name
/// ([`demangle_rust`]), else byte for byte. What the ELF readers use for
/// each symbol they keep.
pub fn rust_demangled_or_raw(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if demangle_rust(name, &mut out) {
        out
    } else {
        name.to_vec()
    }
}

/// True when a `_ZN` name ends with the rustc hash segment `17h` + 16 hex
/// digits + `E`, optionally followed by a `.suffix` (`.llvm.123`, `.cold`).
/// Paths hold `..` (escaped `::`), so the suffix cannot be found by the first dot.
fn has_legacy_hash(s: &str) -> bool {
    let b = s.as_bytes();
    (0..b.len().saturating_sub(19)).rev().any(|i| {
        b[i..].starts_with(b"17h")
            && b[i + 3..i + 19].iter().all(u8::is_ascii_hexdigit)
            && b[i + 19] == b'E'
            && (i + 20 == b.len() || b[i + 20] == b'.')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Option<String> {
        let mut out = Vec::new();
        demangle_rust(s.as_bytes(), &mut out).then(|| String::from_utf8(out).unwrap())
    }

    #[test]
    fn legacy_and_v0_are_demangled_without_hash() {
        assert_eq!(
            d("_ZN4core3fmt5write17h0123456789abcdefE").as_deref(),
            Some("core::fmt::write")
        );
        // Real names from the corpus (rustup 1.29.0, legacy, with `$u7b$` escapes).
        assert_eq!(
            d("_ZN3std4sync4mpmc5waker17current_thread_id5DUMMY29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h9a07a6589d687f4eE").as_deref(),
            Some("std::sync::mpmc::waker::current_thread_id::DUMMY::{{constant}}::{{closure}}::__RUST_STD_INTERNAL_VAL")
        );
        assert_eq!(
            d("_ZN52_$LT$E$u20$as$u20$anyhow..context..ext..StdError$GT$11ext_context17h07879f92d53a7e61E.llvm.42").as_deref(),
            Some("<E as anyhow::context::ext::StdError>::ext_context")
        );
        // cargo 1.95.0, v0 with an LLVM suffix.
        assert_eq!(
            d("_RNvNtNtNtNtCsjrHSEGnQ3l9_3std3sys12thread_local11destructors4list5DTORS.llvm.3643936799275306673").as_deref(),
            Some("std::sys::thread_local::destructors::list::DTORS")
        );
        assert_eq!(
            d("_RNvCs1234_7mycrate4main").as_deref(),
            Some("mycrate::main")
        );
    }

    #[test]
    fn c_and_cpp_names_are_left_alone() {
        assert_eq!(d("_ZN3foo3barEv"), None);
        assert_eq!(d("_ZN3foo3barE"), None);
        assert_eq!(d("do_fork"), None);
        assert_eq!(d("_R"), None);
        assert_eq!(d("_ZN3foo17h0123456789abcdefEv"), None);
        let mut out = Vec::new();
        assert!(!demangle_rust(b"_ZN\xff", &mut out));
        assert!(out.is_empty());
    }
}
