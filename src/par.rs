//! Work on every core (rayon's threads, feature `parallel`), or one item
//! after another without it: the same results, in the same order.

/// `a` and `b` on two cores, else one after the other.
pub(crate) fn join<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    #[cfg(feature = "parallel")]
    return rayon::join(a, b);
    #[cfg(not(feature = "parallel"))]
    (a(), b())
}

/// `f` of every item, in the items' order; the first error (by item
/// order without `parallel`, by whichever worker meets one with it).
pub(crate) fn try_map<T: Send, U: Send, E: Send>(
    items: Vec<T>,
    f: impl Fn(T) -> Result<U, E> + Sync + Send,
) -> Result<Vec<U>, E> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        items.into_par_iter().map(f).collect()
    }
    #[cfg(not(feature = "parallel"))]
    {
        items.into_iter().map(f).collect()
    }
}
