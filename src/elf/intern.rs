//! The ids a sweep of DWARF gives its source table (strings and inline
//! nodes interned in order of first use), and the tables of a sweep cut
//! into address ranges merged into the one table a single sweep gives, id
//! for id (`ksym::elf::dwarf` cuts its sweep into one piece per thread).

use std::collections::HashMap;

use crate::blob::v2::source_lines::write::{InlineNode, LineRow, SourceTable};

/// The sweep's dedup maps (strings, files, inline nodes: millions of
/// probes for a vmlinux): foldhash, several times SipHash's speed on short
/// keys, with a per-process random seed so that crafted DWARF cannot aim
/// at collisions.
pub(crate) type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Interns byte strings as dense ids.
#[derive(Default)]
pub(crate) struct Interner {
    pub(crate) ids: Map<Vec<u8>, u32>,
    pub(crate) strings: Vec<Vec<u8>>,
}

impl Interner {
    /// The id of `s`, new ones numbered in order of first use.
    pub(crate) fn id(&mut self, s: &[u8]) -> u32 {
        match self.ids.get(s) {
            Some(&i) => i,
            None => self.add(s.to_vec()),
        }
    }

    /// The id of `raw` demangled as frames are
    /// ([`super::functions::demangle_into`]), or of `raw` itself when it is
    /// no Rust or C++ name; `scratch` holds the demangling.
    pub(crate) fn id_demangled(&mut self, raw: &[u8], scratch: &mut Vec<u8>) -> u32 {
        scratch.clear();
        if super::functions::demangle_into(raw, scratch) {
            self.id(scratch)
        } else {
            self.id(raw)
        }
    }

    /// [`Interner::id`] of a string the caller gives up.
    fn id_owned(&mut self, s: Vec<u8>) -> u32 {
        match self.ids.get(&s) {
            Some(&i) => i,
            None => self.add(s),
        }
    }

    /// [`Interner::id_owned`] for a string no later lookup asks for: a new
    /// one is listed, not hashed in (nor copied for the map's key).
    fn id_listed(&mut self, s: Vec<u8>) -> u32 {
        match self.ids.get(&s) {
            Some(&i) => i,
            None => {
                self.strings.push(s);
                self.strings.len() as u32 - 1
            }
        }
    }

    /// The id of `s`, which has none yet.
    fn add(&mut self, s: Vec<u8>) -> u32 {
        let i = self.strings.len() as u32;
        self.strings.push(s.clone());
        self.ids.insert(s, i);
        i
    }
}

/// A table a sweep built, with the maps it built it by: [`merge`] goes on
/// with the first piece's maps instead of hashing its strings and nodes
/// again (on a Rust binary, most of the merge's time).
pub(crate) struct Swept {
    pub(crate) table: SourceTable,
    /// Every string of the table, by its bytes.
    pub(crate) string_ids: Map<Vec<u8>, u32>,
    /// Every node of the table but node 0 ("none", never a key: a real
    /// node may equal its default), by its fields.
    pub(crate) node_ids: Map<InlineNode, u32>,
}

/// Tables of consecutive address ranges as one: strings, files and nodes
/// of each later table renumbered into the first's (new ones appended in
/// their order), rows appended, a row equal to the one before it dropped
/// as the sweep drops it.
pub(crate) fn merge(tables: Vec<Swept>) -> SourceTable {
    let mut it = tables.into_iter().peekable();
    let Some(Swept {
        table: mut out,
        string_ids,
        node_ids: mut nodes,
    }) = it.next()
    else {
        return SourceTable::default();
    };
    let mut strings = Interner {
        ids: string_ids,
        strings: std::mem::take(&mut out.strings),
    };
    let mut files: Map<(u32, u32), u32> = (out.files.iter().enumerate().skip(1))
        .map(|(i, &f)| (f, i as u32))
        .collect();
    // The maps hold a key allocation per string and node: freed later.
    let mut spent = Vec::new();
    while let Some(Swept {
        table: t,
        string_ids,
        node_ids,
    }) = it.next()
    {
        spent.push((string_ids, node_ids));
        let last = it.peek().is_none();
        // No table after the last looks its strings up.
        let smap: Vec<u32> = (t.strings.into_iter())
            .map(|s| match last {
                true => strings.id_listed(s),
                false => strings.id_owned(s),
            })
            .collect();
        let string = |i: u32| if i == u32::MAX { i } else { smap[i as usize] };
        let mut fmap = vec![0u32; t.files.len()];
        for (i, &(d, b)) in t.files.iter().enumerate().skip(1) {
            let key = (string(d), string(b));
            fmap[i] = *files.entry(key).or_insert_with(|| {
                out.files.push(key);
                out.files.len() as u32 - 1
            });
        }
        // A table's nodes are distinct, and stay so renumbered: a node
        // under one this table added is new too, found without a hash,
        // and only a later table needs to find it again.
        let known = out.nodes.len() as u32;
        out.nodes.reserve(t.nodes.len());
        let mut nmap = vec![0u32; t.nodes.len()];
        for (i, n) in t.nodes.iter().enumerate().skip(1) {
            // A parent comes before its children: already mapped.
            let key = InlineNode {
                parent: nmap[n.parent as usize],
                name: string(n.name),
                call_file: fmap[n.call_file as usize],
                ..*n
            };
            let found = if key.parent >= known {
                None
            } else {
                nodes.get(&key).copied()
            };
            nmap[i] = found.unwrap_or_else(|| {
                let id = out.nodes.len() as u32;
                out.nodes.push(key);
                if !last {
                    nodes.insert(key, id);
                }
                id
            });
        }
        let key = |r: &LineRow| (r.file, r.line, r.column, r.node, r.discriminator);
        out.rows.reserve(t.rows.len());
        for r in t.rows {
            let row = LineRow {
                file: fmap[r.file as usize],
                node: nmap[r.node as usize],
                ..r
            };
            if out.rows.last().is_none_or(|l| key(l) != key(&row)) {
                out.rows.push(row);
            }
        }
    }
    out.strings = strings.strings;
    crate::reclaim::drop_later((spent, strings.ids, nodes, files));
    out
}
