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

/// `f` of every item, the results in the items' order, the items started
/// heaviest first by `weight`; the first error (by weight without
/// `parallel`, by whichever worker meets one with it).
///
/// Where a few items outweigh the rest (a Rust binary's four largest DWARF
/// units hold a third of its DIEs, one of them 468th of 484), taking them
/// in order leaves one core alone on the last while the other waits; taken
/// first, the small ones fill in behind them (the model's two passes over
/// that binary's units left one core idle for their last 45 ms; now both
/// stay busy to the end).
pub(crate) fn try_map_heaviest_first<T: Send, U: Send, E: Send>(
    items: Vec<T>,
    weight: impl Fn(&T) -> u64,
    f: impl Fn(T) -> Result<U, E> + Sync + Send,
) -> Result<Vec<U>, E> {
    let mut tagged: Vec<(usize, T)> = items.into_iter().enumerate().collect();
    tagged.sort_by_key(|(i, t)| (std::cmp::Reverse(weight(t)), *i));
    let each = |(i, t)| f(t).map(|u| (i, u));
    // One task an item: rayon's adaptive split stops halving a range once
    // no thread steals from it, and a thread busy elsewhere when the
    // ranges were split (the names' learner) would find nothing to take.
    #[cfg(feature = "parallel")]
    let mut done: Vec<(usize, U)> = {
        use rayon::prelude::*;
        tagged
            .into_par_iter()
            .with_max_len(1)
            .map(each)
            .collect::<Result<_, E>>()?
    };
    #[cfg(not(feature = "parallel"))]
    let mut done: Vec<(usize, U)> = tagged.into_iter().map(each).collect::<Result<_, E>>()?;
    done.sort_unstable_by_key(|d| d.0);
    Ok(done.into_iter().map(|d| d.1).collect())
}
