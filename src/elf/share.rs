//! Indices `0..n` shared out among workers that each walk theirs in
//! ascending order: each worker starts on an equal cut, claims it a block at
//! a time, and when it runs out takes the upper half of what the busiest
//! worker has left. A walk that goes on where it stopped is cheaper than a
//! new one (the DWARF sweep keeps a context's parsed units and its caches),
//! so cuts are few; yet equal counts are not equal work (a Rust binary's
//! upper half of boundaries took 1.4 times the lower half's time), so the
//! workers still end together.

use std::ops::Range;
use std::sync::Mutex;

/// How many indices a worker claims at once: the lock is taken once per
/// block.
const BLOCK: usize = 256;

/// Every worker's range left, `[next, end)`.
struct Ranges(Vec<Mutex<Range<usize>>>);

impl Ranges {
    fn lock(&self, w: usize) -> std::sync::MutexGuard<'_, Range<usize>> {
        // A worker that panicked while holding a lock left its range
        // consistent: every update is one assignment.
        self.0[w].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// For worker `me`, whose range is empty: the upper half of the
    /// largest range left, if at least `min` indices are left there. The
    /// new range's start.
    fn steal(&self, me: usize, min: usize) -> Option<usize> {
        let victim = (0..self.0.len())
            .filter(|&w| w != me)
            .max_by_key(|&w| self.lock(w).len())?;
        let (mid, end) = {
            let mut r = self.lock(victim);
            if r.len() < min.max(2) {
                return None;
            }
            let mid = r.start + r.len() / 2;
            let end = r.end;
            r.end = mid;
            (mid, end)
        };
        *self.lock(me) = mid..end;
        Some(mid)
    }
}

/// Worker `me`'s indices, in ascending order, claimed as they are walked.
pub(crate) struct Claim<'r> {
    ranges: &'r Ranges,
    me: usize,
    block: Range<usize>,
}

impl Iterator for Claim<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.block.is_empty() {
            let mut r = self.ranges.lock(self.me);
            let take = r.len().min(BLOCK);
            if take == 0 {
                return None;
            }
            self.block = r.start..r.start + take;
            r.start += take;
        }
        let i = self.block.start;
        self.block.start += 1;
        Some(i)
    }
}

/// Walks `0..n` with `workers` workers (on rayon's threads with feature
/// `parallel`, else one after another), each with its own state from
/// `init`. `walk` is called once per segment a worker walks (its first cut,
/// then each half it takes over, of at least `min_steal` indices) with the
/// worker's state and the segment's indices, in ascending order. Returns
/// each segment's start and result, by start: consecutive segments that
/// cover `0..n` once.
///
/// Errors: the first error of `init` or `walk`, by worker.
pub(crate) fn share<C, T, E>(
    n: usize,
    workers: usize,
    min_steal: usize,
    init: impl Fn() -> Result<C, E> + Sync,
    walk: impl Fn(&C, &mut Claim<'_>) -> Result<T, E> + Sync,
) -> Result<Vec<(usize, T)>, E>
where
    T: Send,
    E: Send,
{
    let workers = workers.clamp(1, n.max(1));
    let ranges = Ranges(
        (0..workers)
            .map(|w| Mutex::new(n * w / workers..n * (w + 1) / workers))
            .collect(),
    );
    let worker = |me: usize| -> Result<Vec<(usize, T)>, E> {
        let state = init()?;
        let mut done = Vec::new();
        let mut start = ranges.lock(me).start;
        loop {
            let mut claim = Claim {
                ranges: &ranges,
                me,
                block: 0..0,
            };
            done.push((start, walk(&state, &mut claim)?));
            match ranges.steal(me, min_steal) {
                Some(s) => start = s,
                None => return Ok(done),
            }
        }
    };
    #[cfg(feature = "parallel")]
    let parts: Vec<_> = {
        use rayon::prelude::*;
        (0..workers).into_par_iter().map(worker).collect()
    };
    #[cfg(not(feature = "parallel"))]
    let parts: Vec<_> = (0..workers).map(worker).collect();
    let mut segments = Vec::new();
    for p in parts {
        segments.extend(p?);
    }
    segments.sort_unstable_by_key(|s| s.0);
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every index is walked once, in ascending runs that start where their
    /// segment says, whatever the workers and the stealing threshold.
    #[test]
    fn segments_cover_every_index_once() {
        for (n, workers, min) in [
            (0, 2, 1),
            (1, 4, 1),
            (10_000, 2, 64),
            (10_000, 7, 1),
            (777, 3, 5000),
        ] {
            let segs = share(
                n,
                workers,
                min,
                || Ok::<_, ()>(()),
                |_, claim| Ok(claim.collect::<Vec<_>>()),
            )
            .unwrap();
            let mut next = 0;
            for (start, walked) in &segs {
                if walked.is_empty() {
                    continue;
                }
                assert_eq!(*start, next, "{n} {workers} {min}");
                assert!(walked.windows(2).all(|w| w[1] == w[0] + 1));
                assert_eq!(walked[0], next);
                next += walked.len();
            }
            assert_eq!(next, n, "{n} {workers} {min}");
        }
    }

    /// A worker with nothing left takes the upper half of the largest
    /// range left, and none under the threshold.
    #[test]
    fn a_steal_takes_the_upper_half_of_the_most_left() {
        let r = Ranges(vec![
            Mutex::new(5..5),
            Mutex::new(10..20),
            Mutex::new(20..60),
        ]);
        assert_eq!(r.steal(0, 8), Some(40));
        assert_eq!(*r.lock(0), 40..60);
        assert_eq!(*r.lock(2), 20..40);
        assert_eq!(r.steal(1, 100), None);
        assert_eq!(*r.lock(2), 20..40);
    }
}
