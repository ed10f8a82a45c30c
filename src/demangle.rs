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
    let body = s.strip_prefix('_').unwrap_or(s); // Mach-O adds one more '_'
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

/// True when a `_ZN` name ends (before any `.llvm.`-style suffix) with the
/// rustc hash segment `17h` + 16 hex digits + `E`.
fn has_legacy_hash(s: &str) -> bool {
    let core = s.split('.').next().unwrap_or(s);
    let b = core.as_bytes();
    b.len() >= 20 && {
        let tail = &b[b.len() - 20..];
        tail.starts_with(b"17h")
            && tail[19] == b'E'
            && tail[3..19].iter().all(u8::is_ascii_hexdigit)
    }
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
        assert_eq!(
            d("_ZN71_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h5a1e2d3c4b5a6978E")
                .as_deref(),
            Some("<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop")
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
        let mut out = Vec::new();
        assert!(!demangle_rust(b"_ZN\xff", &mut out));
        assert!(out.is_empty());
    }
}
