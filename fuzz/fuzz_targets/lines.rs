//! Arbitrary bytes as a v2 `lines` section (FORMAT.md §15): parse must
//! refuse or accept without panic; on an accepted section every lookup
//! around the table's span, every frame walk and verify() must stay in
//! bounds and end; when verify() passes, found rows must ascend with the
//! address and lie at or below it. Every block decoded whole
//! (`block_rows`) gives at most its header's rows a block (32..=256),
//! ascending from the block's first address when verify() passes.
#![no_main]

use ksym::blob::v2::source_lines::read::LineTable;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(t) = LineTable::parse(data, 0) else { return };
    let sound = t.verify().is_ok();
    let (lo, hi) = t.span();
    let step = (hi.saturating_sub(lo) / 512).max(1);
    let mut prev = None;
    let mut a = lo.saturating_sub(2);
    let mut frames = 0usize;
    while a <= hi.saturating_add(2) {
        if let Some(r) = t.find(a) {
            if sound {
                assert!(r.address <= a);
                assert!(prev.is_none_or(|p| p <= r.address));
                prev = Some(r.address);
            }
            for f in t.frames(&r) {
                frames += 1;
                if let Some(s) = t.function(f.function) {
                    let mut n = 0;
                    s.for_each_run(|r| n += r.len());
                }
                if let Some((dir, base)) = t.file(f.file) {
                    let _ = dir.runs().count() + base.runs().count();
                }
            }
            assert!(frames <= 1 << 24);
        }
        match a.checked_add(step) {
            Some(n) => a = n,
            None => break,
        }
    }
    for b in 0..t.blocks().min(4096) {
        let (mut n, mut last) = (0usize, t.block_address(b));
        let whole = t.block_rows(b, |r| {
            n += 1;
            if sound {
                assert!(r.address >= last);
                last = r.address;
            }
        });
        assert!(n <= t.rows_per_block() && t.rows_per_block() <= 256);
        if sound {
            assert!(whole.is_some());
        }
    }
    assert!(t.block_rows(t.blocks(), |_| ()).is_none());
});
