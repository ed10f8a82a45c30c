//! The prefixes a kernel log line arrives behind, as the kernel, `dmesg`,
//! journald and syslog daemons write them, so that a frame is recognised
//! whatever carried it to the reader. The resolver keeps the prefix byte
//! for byte and reads the line behind it.
//!
//! Recognised, alone or in sequence (docs/resolve.md lists them):
//! - a console or `/dev/kmsg` level `<4>` (`printk_get_level`);
//! - a printk timestamp `[   12.345678]`, and the caller id that
//!   `CONFIG_PRINTK_CALLER` adds after it: `[    C0]`, `[ T9186]`
//!   (`kernel/printk/printk.c`, `info_print_prefix`);
//! - `dmesg -T` `[Tue Nov 24 10:00:01 2026]`, `dmesg -e` `[  +0.000004]`
//!   and `[Nov24 10:00]`, `dmesg -d` `[    1.234567 <    0.000004>]`;
//! - `dmesg -x` `kern  :warn  : `;
//! - syslog and `journalctl -k`: `Nov 24 10:00:01 host kernel: `, with
//!   sub-second digits, or an ISO date `2026-11-24T10:00:01.123456+00:00`;
//!   the tag is `kernel:` (or `kernel[PID]:`), within 64 bytes of the date.

use super::bytes::is_blank;

/// Length in bytes of the log prefix at the start of `line` (no newline),
/// up to the first byte of the message; blanks between prefix parts and
/// after the last one belong to the prefix. 0 when there is none.
pub(in crate::resolve) fn prefix_len(line: &[u8]) -> usize {
    let mut at = 0;
    // Each part at most once, in the order a line can carry them; a
    // syslog header comes first and a kernel timestamp may follow it.
    let blanks = |s: &[u8]| s.iter().take_while(|&&b| is_blank(b)).count();
    if let Some(n) = syslog(line) {
        at = n + blanks(&line[n..]);
    }
    if let Some(n) = facility_level(&line[at..]) {
        at += n;
        at += blanks(&line[at..]);
    }
    if let Some(n) = level(&line[at..]) {
        at += n;
    }
    let mut brackets = 0;
    while brackets < 2 {
        let Some(n) = bracket(&line[at..], brackets > 0) else {
            break;
        };
        at += n;
        brackets += 1;
    }
    if at == 0 {
        return 0;
    }
    at + line[at..].iter().take_while(|&&b| is_blank(b)).count()
}

/// `<N>` with one to three digits.
fn level(s: &[u8]) -> Option<usize> {
    let rest = s.strip_prefix(b"<")?;
    let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    ((1..=3).contains(&n) && rest.get(n) == Some(&b'>')).then_some(n + 2)
}

/// A bracketed timestamp or, after one (`caller`), a caller id.
fn bracket(s: &[u8], caller: bool) -> Option<usize> {
    let rest = s.strip_prefix(b"[")?;
    let close = rest.iter().take(40).position(|&b| b == b']')?;
    let inner = &rest[..close];
    let t = &inner[inner.iter().take_while(|&&b| b == b' ').count()..];
    let ok = if caller {
        // `[    C0]`, `[ T9186]`
        matches!(t.first(), Some(b'C' | b'T'))
            && t.len() > 1
            && t[1..].iter().all(u8::is_ascii_digit)
    } else {
        seconds(t).is_some_and(|n| n == t.len()) || delta(t) || dated(t)
    };
    ok.then_some(close + 2)
}

/// `12.345678`: digits, a dot, digits; the length, or `None`.
fn seconds(t: &[u8]) -> Option<usize> {
    let a = t.iter().take_while(|b| b.is_ascii_digit()).count();
    let b = t
        .get(a + 1..)?
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    (a > 0 && b > 0 && t[a] == b'.').then_some(a + 1 + b)
}

/// `+0.000004` (dmesg -e), `1.234567 <    0.000004>` (dmesg -d).
fn delta(t: &[u8]) -> bool {
    if let Some(r) = t.strip_prefix(b"+") {
        return seconds(r) == Some(r.len());
    }
    let Some(n) = seconds(t) else { return false };
    let r = &t[n..];
    let r = &r[r.iter().take_while(|&&b| b == b' ').count()..];
    let Some(r) = r.strip_prefix(b"<").and_then(|r| r.strip_suffix(b">")) else {
        return false;
    };
    let r = &r[r.iter().take_while(|&&b| b == b' ').count()..];
    seconds(r) == Some(r.len())
}

/// `Tue Nov 24 10:00:01 2026` (dmesg -T), `Nov24 10:00` (dmesg -e): a
/// month name and a clock, nothing but letters, digits, blanks and `:`.
fn dated(t: &[u8]) -> bool {
    t.iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b' ' || b == b':')
        && month_at(t).is_some()
        && t.windows(3)
            .any(|w| w[0].is_ascii_digit() && w[1] == b':' && w[2].is_ascii_digit())
}

const MONTHS: [&[u8]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// Where a month name starts in `t`, as a whole word's first three letters.
fn month_at(t: &[u8]) -> Option<usize> {
    (0..t.len().saturating_sub(2))
        .find(|&i| (i == 0 || t[i - 1] == b' ') && MONTHS.iter().any(|m| t[i..].starts_with(m)))
}

/// `kern  :warn  : ` (dmesg -x): a facility and a level, each padded.
fn facility_level(s: &[u8]) -> Option<usize> {
    const FACILITIES: [&[u8]; 13] = [
        b"kern",
        b"user",
        b"mail",
        b"daemon",
        b"auth",
        b"syslog",
        b"lpr",
        b"news",
        b"uucp",
        b"cron",
        b"authpriv",
        b"ftp",
        b"local",
    ];
    const LEVELS: [&[u8]; 8] = [
        b"emerg", b"alert", b"crit", b"err", b"warn", b"notice", b"info", b"debug",
    ];
    let word = |s: &[u8], set: &[&[u8]]| -> Option<usize> {
        let n = s.iter().take_while(|b| b.is_ascii_alphanumeric()).count();
        let w = &s[..n];
        let known = set
            .iter()
            .any(|k| w == *k || (*k == b"local" && w.starts_with(k) && n == 6));
        if !known {
            return None;
        }
        let pad = s[n..].iter().take_while(|&&b| b == b' ').count();
        (s.get(n + pad) == Some(&b':')).then_some(n + pad + 1)
    };
    let a = word(s, &FACILITIES)?;
    let b = word(&s[a..], &LEVELS)?;
    (s.get(a + b) == Some(&b' ')).then_some(a + b + 1)
}

/// A syslog or journal header ending in the `kernel:` tag:
/// `Nov 24 10:00:01[.123456] host kernel: ` or
/// `2026-11-24T10:00:01[.123456][+00:00|Z] host kernel: `.
fn syslog(s: &[u8]) -> Option<usize> {
    let date = if MONTHS.iter().any(|m| s.starts_with(m)) && s.get(3) == Some(&b' ') {
        // `Nov 24 10:00:01` or `Nov  4 10:00:01`
        let r = &s[4..];
        let d = r.iter().take_while(|&&b| b == b' ').count();
        let n = r[d..].iter().take_while(|b| b.is_ascii_digit()).count();
        if !(1..=2).contains(&n) || r.get(d + n) != Some(&b' ') {
            return None;
        }
        4 + d + n + 1 + clock(&r[d + n + 1..])?
    } else {
        // `2026-11-24T10:00:01`
        let iso = s.len() > 11
            && s[..10].iter().enumerate().all(|(i, b)| {
                if i == 4 || i == 7 {
                    *b == b'-'
                } else {
                    b.is_ascii_digit()
                }
            })
            && s[10] == b'T';
        if !iso {
            return None;
        }
        11 + clock(&s[11..])?
    };
    let r = &s[date..];
    let r = &r[..r.len().min(64)];
    // Asked of every syslog-shaped line: the searcher is built once.
    static KERNEL: std::sync::LazyLock<bstr::Finder<'static>> =
        std::sync::LazyLock::new(|| bstr::Finder::new(b" kernel"));
    let tag = KERNEL.find(r)?;
    let after = &r[tag + 7..];
    let end = match after.first() {
        Some(b':') => tag + 8,
        Some(b'[') => {
            let c = after.iter().position(|&b| b == b']')?;
            (after.get(c + 1) == Some(&b':')).then_some(tag + 7 + c + 2)?
        }
        _ => return None,
    };
    Some(date + end)
}

/// `10:00:01`, maybe `.123456`, maybe a zone `+00:00`, `+0000` or `Z`.
fn clock(s: &[u8]) -> Option<usize> {
    let ok = s.len() >= 8
        && s[..8].iter().enumerate().all(|(i, b)| {
            if i == 2 || i == 5 {
                *b == b':'
            } else {
                b.is_ascii_digit()
            }
        });
    if !ok {
        return None;
    }
    let mut n = 8;
    if s.get(n) == Some(&b'.') {
        n += 1 + s[n + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
    }
    match s.get(n) {
        Some(b'Z') => n += 1,
        Some(b'+' | b'-') => {
            n += 1 + s[n + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b':')
                .count()
        }
        _ => {}
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rest(line: &str) -> &str {
        &line[prefix_len(line.as_bytes())..]
    }

    #[test]
    fn every_documented_prefix_is_recognised() {
        let msg = "? vfs_read+0x9d/0x130";
        for p in [
            "[   12.345678]  ",
            "[ 2331.755414][    C0]  ",
            "[  502.005747][ T9186]  ",
            "<4>[   12.345678] ",
            "<4>",
            "Nov 24 10:00:01 host kernel:  ",
            "Nov  4 10:00:01 host kernel: ",
            "Nov 24 10:00:01.123456 host kernel: ",
            "Nov 24 10:00:01 host kernel: [   12.345678] ",
            "2026-11-24T10:00:01.123456+00:00 host kernel: ",
            "2026-11-24T10:00:01+0000 host kernel[1]: ",
            "[Tue Nov 24 10:00:01 2026] ",
            "[  +0.000004] ",
            "[Nov24 10:00] ",
            "[    1.234567 <    0.000004>] ",
            "kern  :warn  : ",
            "kern  :warn  : [   12.345678] ",
            "local7:info  : ",
        ] {
            let line = format!("{p}{msg}");
            assert_eq!(rest(&line), msg, "{p:?}");
        }
    }

    #[test]
    fn other_text_is_not_a_prefix() {
        for line in [
            "vfs_read+0x9d/0x130",
            " ? vfs_read+0x9d/0x130",
            "[<ffffffff81000000>] foo+0x1/0x2",
            "[c00000000fe8f8a0] [c000000000a4d8f4] foo+0x80/0xb0",
            "[unknown]",
            "Nov 24 10:00:01 host sshd[12]: hello",
            "Nov 24 10:00 host kernel: x",
            "<12345>x",
            "[ T]",
            "kern :bogus: x",
        ] {
            assert_eq!(rest(line), line, "{line:?}");
        }
    }

    #[test]
    fn caller_id_only_after_a_timestamp() {
        assert_eq!(rest("[    C0] x"), "[    C0] x");
        assert_eq!(rest("[ 1.5][    C0] x"), "x");
    }
}
