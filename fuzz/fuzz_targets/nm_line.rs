//! Arbitrary bytes as nm/kallsyms input: the line parser and the bounded line
//! reader must never panic, a parsed name must be a slice of the line, and
//! the one-pass parser must agree with the general one wherever it answers.
#![no_main]

use ksym::text::lines::{Line, for_each_line};
use ksym::text::nm::{NmLine, parse_canonical, parse_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut total = 0usize;
    for_each_line(std::io::BufReader::with_capacity(7, data), 64, |_, line| {
        match line {
            Line::Full(l) => {
                total += l.len();
                if let Some(s) = parse_canonical(l) {
                    assert_eq!(parse_line(l), Ok(NmLine::Symbol(s)));
                }
                if let Ok(NmLine::Symbol(s)) = parse_line(l) {
                    assert!(!s.name.is_empty());
                    assert!(l.windows(s.name.len()).any(|w| w == s.name));
                }
            }
            Line::Long { piece, .. } => total += piece.len(),
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(total, data.len(), "no byte lost");
});
