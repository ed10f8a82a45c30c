//! The kernel's reserved region for its blob: [`Reserved`], a zero-filled
//! static that the [`reserve!`](crate::reserve) macro places in its own
//! section (`.ksym` by default) and that `ksym-pack --patch-elf` fills
//! after linking (FORMAT.md §2.3). Builds without std.
//!
//! Why a type and not a plain `static [u8; N]`: the compiler sees the zeros
//! the static was linked with, and with LTO it folds reads of it to those
//! zeros, so a kernel whose section holds a valid blob reads "bad blob at
//! byte 0". [`Reserved::bytes`] hands out the region through a pointer read
//! back volatile, which no optimiser can see through, whatever the
//! opt-level, LTO or codegen units.

use super::{BlobError, Kallsyms};

/// A region of `N` bytes, 8-byte aligned (v1 needs it, FORMAT.md §2.2),
/// zero until `ksym-pack --patch-elf` writes a blob into the section that
/// holds it. Declare it with [`reserve!`](crate::reserve); read it with
/// [`open`](Self::open) or [`bytes`](Self::bytes).
#[repr(C, align(8))]
#[derive(Debug)]
pub struct Reserved<const N: usize>([u8; N]);

impl<const N: usize> Reserved<N> {
    /// `N` zero bytes: what the image holds before the post-link step.
    pub const fn new() -> Self {
        Reserved([0; N])
    }

    /// The region's bytes as the running image holds them (`N` bytes):
    /// read through a pointer the compiler cannot trace back to the zeros
    /// this static was initialised with, so the blob written after linking
    /// is what every read returns.
    pub fn bytes(&self) -> &[u8] {
        let p: *const [u8; N] = &self.0;
        // SAFETY: `p` is a live local and properly aligned, so reading it
        // is sound; the volatile read returns the same pointer, with its
        // provenance, but the optimiser may no longer assume what it points
        // to. It points to `self.0`, borrowed for `&self`'s lifetime and
        // never written while the program runs (the image is patched
        // before it starts), so the shared reference is valid.
        #[allow(unsafe_code)]
        unsafe {
            &*core::ptr::read_volatile(&p)
        }
    }

    /// Opens the blob in the region: [`Kallsyms::from_region`] of
    /// [`bytes`](Self::bytes), the blob's own text bounds. Returns the view
    /// and the number of zero bytes after the blob (the reservation's
    /// unused tail).
    ///
    /// Errors: [`BlobErrorKind::NotFilled`](super::BlobErrorKind::NotFilled)
    /// when the post-link step never ran (the region is still all zeros),
    /// whatever format features are on; otherwise as
    /// [`Kallsyms::from_region`], with the byte offset in the region.
    pub fn open(&self) -> Result<(Kallsyms<'_>, usize), BlobError> {
        Kallsyms::from_region(self.bytes(), None, None)
    }
}

impl<const N: usize> Default for Reserved<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Declares the kernel's reserved region for its blob: a
/// [`Reserved`]`<SIZE>` static in section `.ksym` (or the one given), kept
/// by the compiler (`#[used]`) and by the linker (the reader refers to it).
/// `ksym-pack --patch-elf KERNEL` (the same `--section`) fills it after
/// linking; [`Reserved::open`] reads it.
///
/// ```
/// ksym_blob::reserve!(static KSYM: 64 * 1024);
/// ksym_blob::reserve!(pub static OTHER: 4096, section = ".ksym.other");
///
/// // Before the post-link step, the region is not filled.
/// # #[cfg(any(feature = "v1", feature = "v2"))]
/// assert_eq!(KSYM.open().unwrap_err().kind, ksym_blob::BlobErrorKind::NotFilled);
/// assert_eq!(OTHER.bytes().len(), 4096);
/// ```
///
/// `SIZE` is in bytes; `ksym-pack --patch-elf` refuses a blob larger than
/// the section and says how large it is (docs/kernel.md, "Sizing the reservation").
#[macro_export]
macro_rules! reserve {
    ($(#[$m:meta])* $vis:vis static $name:ident: $size:expr) => {
        $crate::reserve!($(#[$m])* $vis static $name: $size, section = ".ksym");
    };
    ($(#[$m:meta])* $vis:vis static $name:ident: $size:expr, section = $section:literal) => {
        $(#[$m])*
        #[unsafe(link_section = $section)]
        #[used]
        $vis static $name: $crate::Reserved<{ $size }> = $crate::Reserved::new();
    };
}
