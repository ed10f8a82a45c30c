//! Thumb-2 mnemonics as GNU objdump spells them, from yaxpeax-arm's: the
//! condition an `IT` block gives the instructions after it (`movne.w`, and
//! a 16-bit flag-setting form loses its `s` there: `movs` → `movne`), the
//! `.n` objdump puts on 16-bit branches, the `.w` it puts on 32-bit forms
//! of instructions that have a 16-bit one (and drops on those that have
//! none), and a few aliases (`negs`, `movw`, `stmdb`, `ldmia`). ARM
//! Architecture Reference Manual (ARMv7-A/R) A8.8.54 (IT) gives the block
//! rules; the spellings are binutils' `thumb_opcodes` and `thumb32_opcodes`
//! tables.

/// Condition names by their 4-bit code, as objdump prints them.
const CONDS: [&str; 16] = [
    "eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "", "",
];

/// 32-bit instructions with no 16-bit form: objdump prints no `.w`.
const NO_NARROW: [&str; 22] = [
    "bl", "blx", "dmb", "dsb", "isb", "clz", "mla", "mls", "umull", "smull", "umlal", "smlal",
    "udiv", "sdiv", "ubfx", "sbfx", "bfi", "bfc", "rbit", "ldrex", "rsb", "uadd8",
];

/// 32-bit data-processing instructions whose 16-bit form objdump tells
/// apart with `.w` where yaxpeax-arm prints none.
const WIDE: [&str; 12] = [
    "and", "ands", "bic", "bics", "orr", "orrs", "eor", "eors", "adc", "adcs", "sbc", "sbcs",
];

/// 16-bit data-processing forms that set flags outside an IT block and
/// not inside it.
const FLAG_SETTING: [&str; 16] = [
    "movs", "adds", "subs", "ands", "orrs", "eors", "lsls", "lsrs", "asrs", "rors", "rsbs", "negs",
    "muls", "bics", "mvns", "adcs",
];

/// The IT block in force: the conditions of the instructions still in it.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::resolve) struct ItBlock {
    conds: [u8; 4],
    /// The next instruction's index in the block, and the block's length.
    at: usize,
    len: usize,
}

impl ItBlock {
    /// The block an `IT` instruction (half-word `0xbfXY`, Y ≠ 0) opens.
    fn open(hw: u16) -> Self {
        let (first, mask) = ((hw >> 4) & 0xf, hw & 0xf);
        let n = 4 - mask.trailing_zeros() as usize;
        let mut b = ItBlock {
            conds: [first as u8; 4],
            at: 0,
            len: n,
        };
        for k in 1..n {
            // Bit 4 - k of the mask: the same condition when it equals the
            // condition's low bit, its inverse otherwise.
            let t = (mask >> (4 - k)) & 1 == first & 1;
            b.conds[k] = if t { first as u8 } else { first as u8 ^ 1 };
        }
        b
    }

    /// The condition of the next instruction, leaving the block by one.
    fn next(&mut self) -> Option<u8> {
        let c = self.conds.get(self.at).filter(|_| self.at < self.len)?;
        self.at += 1;
        Some(*c)
    }
}

/// objdump's spelling of a Thumb instruction of `len` bytes (`bytes` its
/// first bytes) whose yaxpeax-arm mnemonic is `m`; `it` is updated.
pub(in crate::resolve) fn spelling(m: &str, bytes: &[u8], len: usize, it: &mut ItBlock) -> String {
    let hw = u16::from_le_bytes([bytes[0], *bytes.get(1).unwrap_or(&0)]);
    let cond = it.next();
    if len == 2 && hw & 0xff00 == 0xbf00 && hw & 0xf != 0 {
        *it = ItBlock::open(hw);
        return m.to_string();
    }
    let (base, mut q) = match m.rsplit_once('.') {
        Some((b, q @ ("w" | "n"))) => (b.to_string(), q),
        _ => (m.to_string(), ""),
    };
    // yaxpeax-arm names conditions hs/lo where objdump says cs/cc.
    let mut base = match base.strip_suffix("hs").or_else(|| base.strip_suffix("lo")) {
        Some(b) if b == "b" || b == "bl" => {
            format!("{b}{}", if base.ends_with("hs") { "cs" } else { "cc" })
        }
        _ => base,
    };
    if len == 4 {
        if NO_NARROW.contains(&base.as_str()) {
            q = "";
        } else if WIDE.contains(&base.as_str()) && q.is_empty() {
            q = "w";
        }
        if hw & 0xfbf0 == 0xf240 && base == "mov" {
            base = "movw".into();
            q = "";
        }
        if base == "push" {
            base = "stmdb".into();
            q = "";
        } else if base == "pop" && q == "w" {
            base = "ldmia".into();
        }
    } else {
        // B T1 (conditional) and T2: objdump marks them narrow.
        let t1 = hw & 0xf000 == 0xd000 && (hw >> 8) & 0xf < 0xe;
        if t1 || hw & 0xf800 == 0xe000 {
            q = "n";
        }
        if hw & 0xffc0 == 0x4240 && base == "rsbs" {
            base = "negs".into();
        }
        if hw & 0xf800 == 0xc800 && base == "ldm" {
            base = "ldmia".into();
        }
    }
    if let Some(c) = cond {
        if len == 2 && FLAG_SETTING.contains(&base.as_str()) {
            base.pop();
        }
        base.push_str(CONDS[usize::from(c)]);
    }
    if q.is_empty() {
        base
    } else {
        format!("{base}.{q}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_blocks_condition_what_follows() {
        // `itte ne`: ne, ne, eq.
        let mut it = ItBlock::open(0xbf1a);
        assert_eq!(
            (it.next(), it.next(), it.next(), it.next()),
            (Some(1), Some(1), Some(0), None)
        );
        let mut it = ItBlock::default();
        assert_eq!(spelling("it ne", &[0x18, 0xbf], 2, &mut it), "it ne");
        assert_eq!(
            spelling("mov.w", &[0x4f, 0xf0, 0x01, 0x0e], 4, &mut it),
            "movne.w"
        );
        assert_eq!(spelling("movs", &[0x01, 0x20], 2, &mut it), "movs");
    }

    #[test]
    fn objdump_spellings() {
        let mut it = ItBlock::default();
        assert_eq!(spelling("bne", &[0x02, 0xd1], 2, &mut it), "bne.n");
        assert_eq!(spelling("b", &[0x02, 0xe0], 2, &mut it), "b.n");
        assert_eq!(
            spelling("bl.w", &[0xff, 0xf7, 0xfe, 0xff], 4, &mut it),
            "bl"
        );
        assert_eq!(
            spelling("and", &[0x00, 0xf0, 0x01, 0x00], 4, &mut it),
            "and.w"
        );
        assert_eq!(spelling("rsbs", &[0x40, 0x42], 2, &mut it), "negs");
    }
}
