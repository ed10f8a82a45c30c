//! Test program for ksym's source lines: a Rust binary with debug line
//! tables whose small functions and iterator adaptors get inlined.
use std::collections::HashMap;

#[inline(always)]
fn mix(x: u64) -> u64 {
    let x = x ^ (x << 13);
    x ^ (x >> 7)
}

#[inline]
fn score(words: &[&str]) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for (i, w) in words.iter().enumerate() {
        *m.entry(w.to_string()).or_insert(0) += mix(i as u64);
    }
    m
}

#[inline(never)]
fn run(args: &[String]) -> u64 {
    let words: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    score(&words).values().copied().fold(0, u64::wrapping_add)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    std::process::exit((run(&args) % 2) as i32);
}
