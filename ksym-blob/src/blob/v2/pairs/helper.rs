//! A second thread for the first phase's merges ([`narrow`](super::narrow)):
//! the strings split in two at a string's end, each half merged by its own
//! thread, the most frequent pair chosen over both halves' counts between
//! merges. A pair never spans a string's end, so merging the halves apart
//! is merging the whole.
//!
//! The thread that lends itself calls [`Helper::serve`] and gets it back
//! when the first phase is over; the learner posts each merge and waits
//! for it. Both wait by spinning: a merge of a large input takes tens of
//! microseconds, a futex wake on a virtual machine about as long.

use super::narrow::Part;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The fewest bytes of strings worth splitting between two threads.
const MIN_SPLIT: usize = 256 << 10;

/// Job kinds, in bits 24..32 of a posted job.
const COUNT: u64 = 1;
const MERGE: u64 = 2;
const FINISH: u64 = 3;

/// A thread lent to the learner for its first phase: the half of the
/// strings it merges, and the job it was last given. Made by
/// [`Helper::for_strings`]; `default()` makes one for any input, however
/// short (a split gives the same codes, only later).
#[derive(Default)]
pub struct Helper {
    part: Mutex<Part>,
    /// The latest job: its number (bits 32..64), its kind (bits 24..32)
    /// and, for a merge `a b` into `c`, `a`, `b` and `c` (bits 16, 8, 0).
    posted: AtomicU64,
    /// The number of the latest job done.
    done: AtomicU32,
    /// The helper stopped without being told to (it panicked): the
    /// learner must not wait for it.
    gone: AtomicBool,
}

/// Spins until `ready` gives a value, yielding the CPU now and then: the
/// other thread may have been descheduled.
fn wait_for<T>(mut ready: impl FnMut() -> Option<T>) -> T {
    let mut spins = 0u32;
    loop {
        if let Some(v) = ready() {
            return v;
        }
        spins += 1;
        if spins.is_multiple_of(256) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

impl Helper {
    /// A helper for learning strings of `bytes` bytes in all (each
    /// string's bytes and one for its end), if they are enough to be worth
    /// splitting: below 256 KiB a merge takes about as long as the two
    /// threads take to meet.
    pub fn for_strings(bytes: usize) -> Option<Self> {
        (bytes >= MIN_SPLIT).then(Helper::default)
    }

    /// Runs the jobs the learner posts until it says the first phase is
    /// over. Call it on the thread lent, once, while
    /// [`learn_helped`](super::learn_helped) runs on another with this
    /// helper; it returns when the learner no longer needs it, or panics
    /// if the helper's own work did.
    pub fn serve(&self) {
        // Told apart from an ordinary return: the learner waits on
        // `done`, and a helper that panicked never sets it.
        struct Gone<'a>(&'a AtomicBool);
        impl Drop for Gone<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.store(true, Ordering::Release);
                }
            }
        }
        let _gone = Gone(&self.gone);
        let mut last = 0u32;
        loop {
            let job = wait_for(|| {
                let j = self.posted.load(Ordering::Acquire);
                ((j >> 32) as u32 != last).then_some(j)
            });
            last = (job >> 32) as u32;
            match job >> 24 & 0xFF {
                COUNT => self.part().count(),
                MERGE => self
                    .part()
                    .merge((job >> 16) as u8, (job >> 8) as u8, job as u8),
                _ => {
                    self.done.store(last, Ordering::Release);
                    return;
                }
            }
            self.done.store(last, Ordering::Release);
        }
    }

    /// The helper's half. Locked by one thread at a time: the helper
    /// while it works a job, the learner while the helper waits.
    pub(super) fn part(&self) -> MutexGuard<'_, Part> {
        self.part.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Posts a job and returns its number.
    fn post(&self, kind: u64, abc: u64) -> u32 {
        let n = (self.posted.load(Ordering::Relaxed) >> 32) as u32 + 1;
        self.posted
            .store(u64::from(n) << 32 | kind << 24 | abc, Ordering::Release);
        n
    }

    /// Waits for job `n`.
    ///
    /// Panics: if the helper panicked.
    fn wait(&self, n: u32) {
        wait_for(|| {
            if self.gone.load(Ordering::Acquire) {
                panic!("the learner's helper thread panicked");
            }
            (self.done.load(Ordering::Acquire) == n).then_some(())
        })
    }

    /// Starts the helper on its half: it counts the half's pairs while
    /// `mine` is counted here.
    pub(super) fn count_with(&self, mine: &mut Part) {
        let n = self.post(COUNT, 0);
        mine.count();
        self.wait(n);
    }

    /// Merges `a b` into `c` in both halves, the helper's and `mine`.
    pub(super) fn merge_with(&self, mine: &mut Part, a: u8, b: u8, c: u8) {
        let abc = u64::from(a) << 16 | u64::from(b) << 8 | u64::from(c);
        let n = self.post(MERGE, abc);
        mine.merge(a, b, c);
        self.wait(n);
    }

    /// Lets the helper go. Every learn ends with it, whether it split the
    /// strings or not.
    pub(super) fn finish(&self) {
        self.post(FINISH, 0);
    }
}

/// Lets the helper go when dropped, on every way out of the learner, a
/// panic's included: a helper never waits for a learner that has left.
pub(super) struct Release<'a>(pub &'a Helper);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}
