//! Freeing off the critical path: a large structure of many small
//! allocations (a hash map of byte strings, a parsed ELF file's section
//! buffers, a source table) takes milliseconds to drop, while the other
//! core often waits for the thread that drops it. Packing libstdc++ 12
//! spent 5 ms of its 90 in such drops, each on the longest path.

/// Drops `value` on a rayon thread (feature `parallel`), else here. The
/// caller does not wait for it; a process that exits first leaves it to
/// the kernel, which frees the pages at once.
pub(crate) fn drop_later<T: Send + 'static>(value: T) {
    #[cfg(feature = "parallel")]
    rayon::spawn(move || drop(value));
    #[cfg(not(feature = "parallel"))]
    drop(value);
}
