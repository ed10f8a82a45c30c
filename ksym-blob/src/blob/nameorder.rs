//! Name order (FORMAT.md §4: names by bytes, ties by address-order position)
//! and the longest-common-prefix (LCP) array of the names in that order, which
//! token selection walks as a prefix trie (FORMAT.md §3.4).
//!
//! Names lie scattered in memory, so comparing them costs a cache miss each
//! time. The sort works on 16-byte keys instead, one level at a time: sort by
//! bytes `0..16`, then re-key and sort only the groups still tied, by bytes
//! `16..32`, and so on. Each name is read once per level it takes part in,
//! and the LCP of neighbours falls out of the keys. Large inputs are sorted
//! as two halves on two threads.

/// Names by position, as name order and token selection read them: a slice
/// of names, or the writer's symbol list in address order without a slice
/// of 16-byte references beside it.
pub trait NameList: Sync {
    /// Number of names.
    fn len(&self) -> usize;

    /// True when there are no names.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name at position `i` (`i < len()`).
    fn name(&self, i: usize) -> &[u8];

    /// True when every name is ASCII.
    fn all_ascii(&self) -> bool {
        (0..self.len()).all(|i| self.name(i).is_ascii())
    }
}

impl NameList for [&[u8]] {
    fn len(&self) -> usize {
        <[&[u8]]>::len(self)
    }

    fn name(&self, i: usize) -> &[u8] {
        self[i]
    }
}

impl NameList for Vec<&[u8]> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn name(&self, i: usize) -> &[u8] {
        self[i]
    }
}

/// Bytes of a name compared per level.
const CHUNK: usize = 16;

/// Names in name order, with their LCP array.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameOrder {
    /// Positions (indices into the names given) in name order: the blob's
    /// `seqs` section (FORMAT.md §4).
    pub by_name: Vec<u32>,
    /// `lcp[r]`: bytes the names at ranks `r - 1` and `r` share at their
    /// start; `lcp[0] = 0`. Same length as `by_name`.
    pub lcp: Vec<u32>,
}

/// One name's sort key at one level: 16 bytes from the level's offset
/// (zero-padded, big-endian so integer order is byte order), then how many
/// bytes remain from that offset (capped at 17: "more than this chunk"),
/// then the position. Zero padding makes `ab` and `ab\0` tie on the key; the
/// remaining length then puts the shorter (a prefix) first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    hi: u64,
    lo: u64,
    /// `rem << 32 | position`.
    tail: u64,
}

impl Entry {
    fn new(name: &[u8], off: usize, pos: u32) -> Entry {
        let rest = &name[off.min(name.len())..];
        // Fixed-size loads: a variable-length copy would call memmove.
        let k = match rest.first_chunk::<CHUNK>() {
            Some(c) => u128::from_be_bytes(*c),
            None => {
                let mut k = [0u8; CHUNK];
                let (k8, tail) = match rest.first_chunk::<8>() {
                    Some(c) => {
                        k[..8].copy_from_slice(c);
                        (&mut k[8..], &rest[8..])
                    }
                    None => (&mut k[..], rest),
                };
                for (d, &b) in k8.iter_mut().zip(tail) {
                    *d = b;
                }
                u128::from_be_bytes(k)
            }
        };
        let rem = rest.len().min(CHUNK + 1) as u64;
        Entry {
            hi: (k >> 64) as u64,
            lo: k as u64,
            tail: rem << 32 | u64::from(pos),
        }
    }

    fn pos(self) -> u32 {
        self.tail as u32
    }

    /// Bytes of this chunk the name holds (at most 16).
    fn held(self) -> u32 {
        ((self.tail >> 32) as u32).min(CHUNK as u32)
    }

    /// True when the name goes on past this chunk.
    fn continues(self) -> bool {
        (self.tail >> 32) as usize > CHUNK
    }

    /// Bytes of this chunk that `self` and `next` share.
    fn common(self, next: Entry) -> u32 {
        let x = (u128::from(self.hi) << 64 | u128::from(self.lo))
            ^ (u128::from(next.hi) << 64 | u128::from(next.lo));
        (x.leading_zeros() / 8).min(self.held()).min(next.held())
    }
}

/// Sorts `names` into name order and computes their LCP array.
///
/// `names` is indexed by position (the writer passes address order); at most
/// `u32::MAX` names, each at most `u32::MAX` bytes (the writer checks both).
/// Deterministic: ties in bytes go by position, so the order is total.
/// Large inputs (16,384 names or more) are split in two at a sampled key
/// near the middle and the halves sorted on two threads when the machine has
/// them; the result does not depend on it.
pub fn name_order<N: NameList + ?Sized>(names: &N) -> NameOrder {
    const PARALLEL_MIN: usize = 1 << 14;
    let n = names.len();
    let mut entries: Vec<Entry> = (0..n)
        .map(|i| Entry::new(names.name(i), 0, i as u32))
        .collect();
    let mut lcp = vec![0u32; n];
    // Asked only for large inputs: it reads cgroup files on every call.
    let mid =
        if n >= PARALLEL_MIN && std::thread::available_parallelism().is_ok_and(|t| t.get() > 1) {
            split_by_key(&mut entries)
        } else {
            0
        };
    if mid == 0 {
        sort_part(names, &mut entries, &mut lcp);
    } else {
        let spawned = std::thread::scope(|s| {
            let (el, er) = entries.split_at_mut(mid);
            let (ll, lr) = lcp.split_at_mut(mid);
            let spawned = std::thread::Builder::new()
                .spawn_scoped(s, move || sort_part(names, el, ll))
                .is_ok();
            sort_part(names, er, lr);
            spawned
        });
        // No thread to be had: the left half is still to sort.
        if !spawned {
            sort_part(names, &mut entries[..mid], &mut lcp[..mid]);
        }
        // The halves differ in their first 16 bytes, so those keys say it all
        // (the entries themselves may hold deeper keys by now).
        let first = |e: Entry| Entry::new(names.name(e.pos() as usize), 0, e.pos());
        lcp[mid] = first(entries[mid - 1]).common(first(entries[mid]));
    }
    NameOrder {
        by_name: entries.iter().map(|e| e.pos()).collect(),
        lcp,
    }
}

/// Moves the entries whose 16-byte key is below a sampled median key to the
/// front and returns how many there are. Equal keys stay on one side, so no
/// group of tied names is cut. 0 when the sample finds no split.
fn split_by_key(entries: &mut [Entry]) -> usize {
    let key = |e: &Entry| (e.hi, e.lo);
    // Scattered positions, not a fixed stride: in address order every other
    // kernel symbol is a `__pfx_` padding symbol, and an even stride sees
    // only one kind.
    let n = entries.len() as u64;
    let mut sample: Vec<(u64, u64)> = (0..1024u64)
        .map(|k| key(&entries[(k.wrapping_mul(0x9E37_79B9_7F4A_7C15) % n) as usize]))
        .collect();
    sample.sort_unstable();
    // Kernel names crowd on a few keys (`__pfx___x64_sys`): take the key
    // where the sample splits nearest its middle, not the sample median,
    // which would send a whole crowd to one side.
    let half = sample.len() / 2;
    let pivot = (1..sample.len())
        .filter(|&i| sample[i] != sample[i - 1])
        .min_by_key(|&i| i.abs_diff(half))
        .map_or(sample[0], |i| sample[i]);
    let (mut i, mut j) = (0, entries.len());
    loop {
        while i < j && key(&entries[i]) < pivot {
            i += 1;
        }
        while i < j && key(&entries[j - 1]) >= pivot {
            j -= 1;
        }
        if i == j {
            return i;
        }
        entries.swap(i, j - 1);
    }
}

/// Sorts `entries` and fills `lcp[1..]` for them (`lcp[0]` is the caller's:
/// it pairs with the entry before this part).
fn sort_part<N: NameList + ?Sized>(names: &N, entries: &mut [Entry], lcp: &mut [u32]) {
    // Groups of ranks whose names share their first `off` bytes: (lo, hi, off).
    let mut groups = vec![(0usize, entries.len(), 0usize)];
    while let Some((lo, hi, off)) = groups.pop() {
        let group = &mut entries[lo..hi];
        if off > 0 {
            for e in group.iter_mut() {
                *e = Entry::new(names.name(e.pos() as usize), off, e.pos());
            }
        }
        group.sort_unstable();
        let mut run = 0; // start of the current run of names tied past this chunk
        for r in 1..group.len() {
            let (a, b) = (group[r - 1], group[r]);
            let tied = a.hi == b.hi && a.lo == b.lo;
            if tied && a.continues() && b.continues() {
                continue;
            }
            // An equal key with equal lengths inside the chunk: equal names.
            lcp[lo + r] = off as u32
                + if tied {
                    a.held().min(b.held())
                } else {
                    a.common(b)
                };
            if r - run > 1 {
                groups.push((lo + run, lo + r, off + CHUNK));
            }
            run = r;
        }
        if group.len() - run > 1 {
            groups.push((lo + run, hi, off + CHUNK));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oracle(names: &[&[u8]]) -> NameOrder {
        let mut by_name: Vec<u32> = (0..names.len() as u32).collect();
        by_name.sort_by(|&a, &b| names[a as usize].cmp(names[b as usize]).then(a.cmp(&b)));
        let mut lcp = vec![0u32; names.len()];
        for r in 1..names.len() {
            let (a, b) = (names[by_name[r - 1] as usize], names[by_name[r] as usize]);
            lcp[r] = a.iter().zip(b).take_while(|(x, y)| x == y).count() as u32;
        }
        NameOrder { by_name, lcp }
    }

    #[test]
    fn byte_order_then_position_with_lcp() {
        let long_a = [b'x'; 40];
        let mut long_b = [b'x'; 40];
        long_b[33] = b'a';
        let names: Vec<&[u8]> = vec![
            b"ab\0",
            b"ab",
            b"b",
            b"ab",
            b"abcdefghijklmnop",
            b"abcdefghijklmnopq",
            b"abcdefghijklmnop\0",
            &long_a,
            &long_b,
            &long_a[..32],
            &long_a,
            b"\xff\xfe",
            b"",
        ];
        assert_eq!(name_order(&names), oracle(&names));
    }

    proptest::proptest! {
        // Shared prefixes of 0, 15, 16, 17 and 33 bytes, then a short tail
        // over a tiny alphabet with NULs: ties across chunk boundaries.
        #[test]
        fn equals_a_comparison_sort(
            names in proptest::collection::vec(
                (
                    proptest::sample::select(vec![0usize, 15, 16, 17, 33]),
                    proptest::collection::vec(proptest::sample::select(b"\0ab".to_vec()), 0..20),
                ),
                0..60,
            )
        ) {
            let names: Vec<Vec<u8>> = names
                .into_iter()
                .map(|(p, tail)| [&[b'p'; 40][..p], &tail].concat())
                .collect();
            let names: Vec<&[u8]> = names.iter().map(|n| n.as_slice()).collect();
            proptest::prop_assert_eq!(name_order(&names), oracle(&names));
        }
    }

    #[test]
    fn large_inputs_split_in_two_give_the_same_order() {
        // Enough names for the two-thread split, with shared prefixes longer
        // than a chunk on both sides of any median.
        let prefixes = [
            "__pfx_",
            "__x64_sys_long_common_part_",
            "m",
            "zz_long_common_prefix_",
        ];
        let owned: Vec<String> = (0..40_000u32)
            .map(|i| {
                format!(
                    "{}{:x}",
                    prefixes[i as usize % 4],
                    i.wrapping_mul(2_654_435_761) % 5000
                )
            })
            .collect();
        let names: Vec<&[u8]> = owned.iter().map(|n| n.as_bytes()).collect();
        assert_eq!(name_order(&names), oracle(&names));
        // Two groups tied past the first chunk, the median in the larger one:
        // the split falls between them, where neighbours share 3 bytes.
        let owned: Vec<String> = (0..40_000u32)
            .map(|i| {
                let p = if i < 16_000 { "aaaa" } else { "aaab" };
                format!(
                    "{p}_long_common_prefix_{}",
                    i.wrapping_mul(2_654_435_761) % 9000
                )
            })
            .collect();
        let names: Vec<&[u8]> = owned.iter().map(|n| n.as_bytes()).collect();
        let got = name_order(&names);
        assert_eq!(got, oracle(&names));
        assert!(got.lcp.contains(&3));
    }

    #[test]
    fn empty_and_single() {
        let none: Vec<&[u8]> = Vec::new();
        assert_eq!(name_order(&none), NameOrder::default());
        let one: Vec<&[u8]> = vec![b"x"];
        assert_eq!(name_order(&one), oracle(&one));
    }
}
