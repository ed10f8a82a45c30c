//! Arbitrary bytes as a process's `/proc/PID/maps` (`ksym-resolve --maps`)
//! and as the lines routed through it: parsing returns the mappings or an
//! error naming a line, never a panic; every mapping of a grouped file is
//! one of the parsed ones with that path; a load bias, when the mappings
//! give one, maps each executable mapping's start into the segment it
//! came from; a line's leading address is the hex number it begins with;
//! a line read as the kernel's fault report places its program counter,
//! if at all, inside an executable segment.
#![no_main]

use ksym::blob::v2::read::LoadSegment;
use ksym::normalize::fault::user_fault;
use ksym::normalize::maps::{file_mappings, leading_address, load_bias, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n') {
        if let Some(a) = leading_address(line) {
            let s = line.trim_ascii_start();
            let digits = s.strip_prefix(b"0x").unwrap_or(s);
            assert!(digits.first().is_some_and(u8::is_ascii_hexdigit), "{a:#x}");
        }
    }
    for line in data.split(|&b| b == b'\n') {
        let Some(f) = user_fault(line) else { continue };
        assert!(f.at <= line.len() && line[..f.at].ends_with(b"]"));
        // Segments from the line's own numbers, so that some fit.
        let (start, size) = f.vma;
        let segments: Vec<LoadSegment> = [(start % 0x1000, f.file_offset.unwrap_or(0) & !0xfff)]
            .iter()
            .chain(&[(f.ip.unwrap_or(0), size)])
            .map(|&(vaddr, offset)| LoadSegment {
                vaddr,
                offset,
                filesz: size,
                memsz: size,
                flags: 5,
            })
            .collect();
        if let Some(a) = f.link_address(&segments) {
            assert!(
                segments.iter().any(|s| a >= s.vaddr && a - s.vaddr < s.filesz),
                "{a:#x} outside the segments"
            );
        }
    }
    let all = match parse(data) {
        Ok(all) => all,
        Err(e) => {
            assert!(e.starts_with("line "), "{e}");
            return;
        }
    };
    for (path, maps) in file_mappings(&all) {
        assert!(path.starts_with(b"/"));
        assert!(maps.iter().all(|m| m.path == path && all.contains(m)));
        assert!(maps.iter().any(|m| m.exec));
        // Segments as if each executable mapping came from one at its own
        // file offset, 0x1000 below its address.
        let segments: Vec<LoadSegment> = maps
            .iter()
            .filter(|m| m.exec)
            .map(|m| LoadSegment {
                vaddr: m.offset.wrapping_add(0x1000),
                offset: m.offset,
                filesz: m.range.end.wrapping_sub(m.range.start),
                memsz: m.range.end.wrapping_sub(m.range.start),
                flags: 5,
            })
            .collect();
        if let Some(bias) = load_bias(&maps, &segments) {
            for m in maps.iter().filter(|m| m.exec) {
                let link = m.range.start.wrapping_sub(bias);
                assert!(
                    segments.iter().any(|s| s.vaddr.wrapping_add(m.offset).wrapping_sub(s.offset) == link),
                    "{:#x} maps outside its segment",
                    m.range.start
                );
            }
        }
    }
});
