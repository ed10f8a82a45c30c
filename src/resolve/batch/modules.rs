//! Module references in the stream (docs/FORMAT.md §16, docs/lines-and-modules.md "Modules"):
//! where a `func+0xOFF [mod]` reference or a raw address lands in module
//! space. References by name need only the blob; raw addresses need the
//! traced machine's /proc/kallsyms ([`LoadedModules`]), whose `[mod]`
//! symbols place each module section at its runtime address.

use std::collections::HashMap;

use crate::blob::Kallsyms;
use crate::blob::list::SymbolList;
use crate::blob::v2::module_space::read::{Module, ModuleSpace};

/// The runtime placement of module sections, from a /proc/kallsyms
/// snapshot (`ksym-resolve --loaded FILE`).
#[derive(Debug, Default, Clone)]
pub struct LoadedModules {
    /// (runtime start, runtime end, module-space base), ascending starts.
    sections: Vec<(u64, u64, u64)>,
    /// vmlinux's KASLR slide: the snapshot's `_stext` less the blob's.
    pub slide: Option<u64>,
    /// Module symbols of the snapshot that placed a section.
    pub placed_by: usize,
    /// Module symbols whose offset disagreed with their section's placement
    /// (another build of the module, or a symbol name used twice).
    pub disagreeing: usize,
    /// Modules of the snapshot that the blob does not hold.
    pub unknown_modules: Vec<Vec<u8>>,
}

impl LoadedModules {
    /// Places the sections of `space`'s modules from `snapshot` (a
    /// /proc/kallsyms read with its `[mod]` column): a section's runtime
    /// start is a symbol's runtime address less its offset in the section;
    /// the first symbol of a section places it, later ones are checked.
    pub fn new(
        snapshot: &SymbolList,
        kernel: &Kallsyms<'_>,
        space: Option<&ModuleSpace<'_>>,
    ) -> Self {
        let mut l = LoadedModules::default();
        if let (Some(stext), Some(i)) = (
            kernel.stext(),
            (0..snapshot.len())
                .find(|&i| snapshot.name(i) == b"_stext" && snapshot.module(i).is_none()),
        ) {
            l.slide = Some(snapshot.address(i).wrapping_sub(stext));
        }
        let Some(space) = space else { return l };
        let mut by_name: HashMap<&[u8], Option<Module<'_>>> = HashMap::new();
        let mut placed: HashMap<usize, u64> = HashMap::new();
        for i in 0..snapshot.len() {
            let Some(m) = snapshot.module(i) else {
                continue;
            };
            let module = by_name.entry(m).or_insert_with(|| space.find_module(m));
            let Some(module) = module else {
                if !l.unknown_modules.iter().any(|u| u == m) {
                    l.unknown_modules.push(m.to_vec());
                }
                continue;
            };
            let Some(s) = space.lookup_name_in(module, snapshot.name(i)) else {
                continue;
            };
            let Some(sec) = space.section_at(s.address) else {
                continue;
            };
            let base = space.section(sec).map_or(0, |x| x.base);
            let start = snapshot.address(i).wrapping_sub(s.address - base);
            match placed.get(&sec) {
                None => {
                    placed.insert(sec, start);
                    l.placed_by += 1;
                }
                Some(&p) if p != start => l.disagreeing += 1,
                Some(_) => {}
            }
        }
        for (sec, start) in placed {
            if let Some(x) = space.section(sec) {
                l.sections.push((start, start.wrapping_add(x.size), x.base));
            }
        }
        l.sections.sort_unstable();
        l
    }

    /// The module-space address of runtime address `addr`, when it is in a
    /// placed module section.
    pub fn to_module_space(&self, addr: u64) -> Option<u64> {
        let i = self
            .sections
            .partition_point(|s| s.0 <= addr)
            .checked_sub(1)?;
        let (start, end, base) = self.sections[i];
        (addr < end).then(|| base + (addr - start))
    }

    /// Number of module sections placed.
    pub fn placed_sections(&self) -> usize {
        self.sections.len()
    }
}
