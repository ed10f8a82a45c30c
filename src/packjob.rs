//! What `ksym-pack` does once its arguments are parsed: read the symbol
//! list, build the blob in the chosen format (with source lines for v2),
//! and send it to stdout, a file (atomically) or an ELF image's reserved
//! section (`--patch-elf`); and `--check` / `--dump` of a blob or reserved
//! region. The binary only parses arguments. Errors are [`CliError`]s
//! naming the input and what was expected.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::blob::list::SymbolList;
use crate::blob::v1::tokens::TokenStrategy;
use crate::blob::v1::write::Layout;
use crate::blob::v2::write::{V2Names, V2Options, pack_v2};
use crate::blob::{Format, Kallsyms};
use crate::blobfile::AlignedBlob;
use crate::cli::{
    CliError, IN_BUF, open_input, stdout_error, stdout_is_terminal, write_atomically,
    write_file_like,
};
use crate::par::join;

/// Writes the packed blob to a stream (either format).
type WriteBlob<'a> = dyn Fn(&mut dyn Write) -> io::Result<()> + 'a;

/// One packing run, as `ksym-pack`'s options describe it.
#[derive(Debug, Default, Clone)]
pub struct PackJob {
    /// The `ADDR TYPE NAME` list: a path, or `-` for stdin.
    pub input: String,
    /// `-o FILE`; `None` for stdout (or `--patch-elf` in place). With
    /// `--patch-elf`, where the patched copy of the ELF goes.
    pub output: Option<PathBuf>,
    /// `-v`: counts and section sizes on stderr.
    pub verbose: bool,
    /// v1's token strategy.
    pub strategy: TokenStrategy,
    /// The blob format (docs/FORMAT.md part I or II).
    pub format: Option<Format>,
    /// v2's identity (release, build-id).
    pub v2: V2Options,
    /// `--lines ELF` and `--columns`; with `--elf`, an empty path stands
    /// for each binary's own (`--lines` without ELF).
    pub lines: Option<(PathBuf, bool)>,
    /// `--patch-elf ELF` and its `--section` (docs/FORMAT.md §2.3).
    pub patch: Option<(PathBuf, String)>,
    /// `--modules DIR` and `--skip-bad-modules` (docs/FORMAT.md §16).
    pub modules: Option<(PathBuf, bool)>,
    /// `--store DIR`: where the blob goes instead of stdout (docs/stores.md).
    pub store: Option<PathBuf>,
    /// `--debuginfod BUILDID`: the ELF to take symbols and lines from.
    pub debuginfod: Option<Vec<u8>>,
    /// `--asm`: the blob as GNU assembler source for a two-pass link, in
    /// this section (`--section`, default `.ksym`).
    pub asm: Option<String>,
    /// `--elf BINARY`s: the symbols are BINARY's functions with their
    /// sizes (`crate::elf::functions`), not INPUT's lines; more than one
    /// needs `--store` (a blob each, packed in parallel).
    pub elf: Vec<PathBuf>,
    /// `--elf-tree DIR`s (with `--store`): every ELF file under each, one
    /// per build-id (`crate::elf::tree`), added to `elf`.
    pub elf_trees: Vec<PathBuf>,
    /// `--debug-dir DIR`s, searched for separate debug files before
    /// `/usr/lib/debug` (`crate::elf::debugfile`).
    pub debug_dirs: Vec<PathBuf>,
    /// `--discriminators`: with `--elf` and `--lines`, keep the line
    /// tables' discriminators, which only oops lines print (kernel packs,
    /// `--lines VMLINUX` with a symbol list, always keep them).
    pub discriminators: bool,
    /// `--gzip`: the blob file compressed at rest (`crate::gzip`,
    /// FORMAT.md §17), for `-o`, stdout and `--store`.
    pub gzip: bool,
}

fn open_blob(path: &Path) -> Result<(AlignedBlob, Option<usize>), CliError> {
    crate::gzip::read_blob_sized(path).map_err(|e| CliError::input(path.display(), e))
}

/// What `--check` and `--dump` say of a reserved region's zeros after the blob.
fn padding_note(padding: usize) -> String {
    match padding {
        0 => String::new(),
        n => format!("; followed by {n} bytes of zero padding (a reserved region)"),
    }
}

/// `ksym-pack --check PATH`: the blob (or reserved region) at `path`
/// passes every check of its format; prints what it holds.
///
/// Errors: the file cannot be read, or the first problem with its offset.
pub fn check(path: &Path) -> Result<(), CliError> {
    let (blob, gzip) = open_blob(path)?;
    let fail = |e| CliError::input(path.display(), e);
    let (k, padding) = Kallsyms::from_file_bytes(blob.as_bytes(), None, None).map_err(fail)?;
    k.verify().map_err(fail)?;
    println!(
        "{}: ok: {}{}{}",
        path.display(),
        gzip.map_or(String::new(), |n| format!("gzip-compressed in {n} bytes, ")),
        crate::blob::describe(&k),
        padding_note(padding)
    );
    Ok(())
}

/// `ksym-pack --dump PATH`: the blob's symbols as `ADDR TYPE
/// NAME[\t[module]]` lines on stdout.
///
/// Errors: the file cannot be read or is not a blob, or stdout fails.
pub fn dump(path: &Path) -> Result<(), CliError> {
    let (blob, _) = open_blob(path)?;
    let (k, padding) = Kallsyms::from_file_bytes(blob.as_bytes(), None, None)
        .map_err(|e| CliError::input(path.display(), e))?;
    if padding > 0 {
        crate::note!("ksym-pack: {}{}", path.display(), padding_note(padding));
    }
    let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
    crate::blob::dump(&k, &mut out).map_err(stdout_error)?;
    out.flush().map_err(stdout_error)
}

impl PackJob {
    /// The format written: `--format`, else v2 for `--elf` (sizes need
    /// it), else v1.
    pub fn effective_format(&self) -> Format {
        self.format
            .unwrap_or(match self.elf.is_empty() && self.elf_trees.is_empty() {
                false => Format::V2,
                true => Format::V1,
            })
    }

    /// Whether the job reads DWARF or ELF files (`--lines`, `--modules`,
    /// `--elf`, `--elf-tree`, `--store`, `--debuginfod`): the jobs worth
    /// [`crate::heap::use_huge_pages`], unlike a symbol list alone.
    pub fn reads_binaries(&self) -> bool {
        self.lines.is_some()
            || self.modules.is_some()
            || self.store.is_some()
            || self.debuginfod.is_some()
            || !self.elf.is_empty()
            || !self.elf_trees.is_empty()
    }

    /// Refuses options that contradict each other (exit 2): what v1 has
    /// no place for, `--elf` with another input, and two destinations for
    /// the blob.
    ///
    /// Errors: [`CliError::Usage`] saying which options clash.
    pub fn check_options(&self) -> Result<(), CliError> {
        let v1 = self.effective_format() == Format::V1;
        let usage = |s: &str| Err(CliError::Usage(s.into()));
        if self
            .lines
            .as_ref()
            .is_some_and(|l| l.0.as_os_str().is_empty())
            && self.elf.is_empty()
            && self.elf_trees.is_empty()
        {
            return usage("--lines needs ELF (it may be left out only with --elf or --elf-tree)");
        }
        if !self.elf_trees.is_empty() && self.store.is_none() {
            return usage("--elf-tree needs --store DIR (a blob per binary, by build-id)");
        }
        if self.elf.len() > 1 && self.store.is_none() {
            return usage("several --elf binaries need --store DIR (a blob each, by build-id)");
        }
        if !self.elf.is_empty() || !self.elf_trees.is_empty() {
            if v1 {
                return usage("--elf needs --format v2 (v1 has no place for symbol sizes)");
            }
            if self.input != "-" {
                return usage("--elf BINARY is the input: give it or INPUT, not both");
            }
            if self.debuginfod.is_some() || self.modules.is_some() {
                return usage(
                    "--elf takes one binary's symbols: not with --debuginfod or --modules",
                );
            }
        }
        if v1 && (!self.v2.release.is_empty() || !self.v2.build_id.is_empty()) {
            return usage("--release and --build-id need --format v2 (v1 has no field for them)");
        }
        if self.discriminators
            && (self.lines.is_none() || self.elf.is_empty() && self.elf_trees.is_empty())
        {
            return usage(
                "--discriminators needs --elf (or --elf-tree) and --lines (kernel packs always keep them)",
            );
        }
        if v1 && self.lines.is_some() {
            return usage("--lines needs --format v2 (v1 has no place for source lines)");
        }
        if v1 && self.modules.is_some() {
            return usage("--modules needs --format v2 (v1 has no place for modules)");
        }
        if v1 && (self.store.is_some() || self.debuginfod.is_some()) {
            return usage(
                "--store and --debuginfod need --format v2 (a store keeps checksummed v2 blobs)",
            );
        }
        // With --patch-elf, -o names the patched copy of the ELF.
        let places = [
            self.output.is_some() || self.patch.is_some(),
            self.store.is_some(),
        ];
        if places.iter().filter(|&&p| p).count() > 1 {
            return usage("-o or --patch-elf, and --store, each say where the blob goes; give one");
        }
        if self.gzip && (self.patch.is_some() || self.asm.is_some()) {
            return usage(
                "--gzip is for the tools' blobs: a kernel reads its blob in place (not with --patch-elf or --asm)",
            );
        }
        if self.asm.is_some() && (self.patch.is_some() || self.store.is_some()) {
            return usage(
                "--asm writes assembler source, to stdout or -o; not with --patch-elf or --store",
            );
        }
        Ok(())
    }

    /// Reads the list, packs it and writes the blob where the job says.
    ///
    /// Errors: a bad input line (with its number), a symbol the format
    /// refuses, unreadable DWARF, a blob that does not fit `--patch-elf`'s
    /// section, or an output that cannot be written; nothing is written then.
    pub fn run(mut self) -> Result<(), CliError> {
        if !self.elf_trees.is_empty() {
            for t in std::mem::take(&mut self.elf_trees) {
                let (found, without_id) = crate::elf::tree::elf_files(&t)
                    .map_err(|e| CliError::input("--elf-tree", e))?;
                if without_id > 0 {
                    crate::note!(
                        "ksym-pack: {}: {without_id} ELF files without a build-id left out",
                        t.display()
                    );
                }
                self.elf.extend(found);
            }
            if self.elf.is_empty() {
                return Err(CliError::input("--elf-tree", "no ELF file with a build-id"));
            }
            return self.run_each_binary();
        }
        if self.elf.len() > 1
            || self
                .lines
                .as_ref()
                .is_some_and(|l| l.0.as_os_str().is_empty())
        {
            return self.run_each_binary();
        }
        let format = self.effective_format();
        let PackJob {
            input,
            output,
            verbose,
            strategy,
            format: _,
            mut v2,
            mut lines,
            patch,
            modules,
            store,
            debuginfod,
            asm,
            elf,
            elf_trees: _,
            debug_dirs,
            discriminators,
            gzip,
        } = self;
        if output.is_none() && patch.is_none() && store.is_none() && stdout_is_terminal() {
            return Err(CliError::Usage(
                "refusing to write a binary blob to a terminal; use -o FILE or a pipe".into(),
            ));
        }
        // --debuginfod: the ELF (symbols and lines) from the servers.
        let fetched = match &debuginfod {
            Some(id) => {
                let urls = std::env::var("DEBUGINFOD_URLS").unwrap_or_default();
                let secs = std::env::var("KSYM_TIMEOUT")
                    .ok()
                    .and_then(|s| s.parse().ok());
                let timeout = std::time::Duration::from_secs_f64(secs.unwrap_or(60.0));
                let elf = crate::store::debuginfod::fetch_elf(&urls, id, timeout)
                    .map_err(|e| CliError::input("--debuginfod", e))?;
                if verbose {
                    crate::note!("ksym-pack: --debuginfod: {}", elf.path().display());
                }
                let columns = lines.as_ref().is_some_and(|l| l.1);
                lines = Some((elf.path().to_owned(), columns));
                Some(elf)
            }
            None => None,
        };
        let dirs = crate::elf::debugfile::DebugDirs { dirs: debug_dirs };
        // A stripped ELF's lines are in its debug file.
        if let Some((path, columns)) = lines.take() {
            let (found, separate) =
                crate::elf::debugfile::with_section(&path, ".debug_info", &dirs);
            if separate && verbose {
                crate::note!(
                    "ksym-pack: --lines: {}'s debug file {}",
                    path.display(),
                    found.display()
                );
            }
            lines = Some((found, columns));
        }
        let elf = elf.into_iter().next();
        // The list's demanglings of --elf's symbols, for the DWARF sweep.
        let demangled = crate::elf::functions::SharedDemangled::default();
        // The symbol list (and for v2 its names' token codes), vmlinux's
        // DWARF and the modules are read at once: the DWARF does not need
        // the list until it is checked against it (below), and the names
        // are the costly part of packing.
        let read_list = || -> Result<_, CliError> {
            let (mut list, segments) = match (&fetched, &elf) {
                (Some(f), _) => (
                    crate::elf::symbols::text_symbols(f.path())
                        .map_err(|e| CliError::input("--debuginfod", e))?,
                    None,
                ),
                (None, Some(bin)) => {
                    let mut f = crate::elf::functions::function_symbols(bin, &dirs)
                        .map_err(|e| CliError::input("--elf", e))?;
                    // Set once, by this thread alone.
                    let _ = demangled.set(std::mem::take(&mut f.demangled));
                    if verbose {
                        crate::note!(
                            "ksym-pack: --elf: {} functions from {} of {}",
                            f.list.len(),
                            f.table.describe(),
                            f.file.display()
                        );
                    }
                    (f.list, Some(f.segments))
                }
                (None, None) => (
                    SymbolList::read_lines(open_input(&input)?)
                        .map_err(|e| CliError::input(&input, e))?,
                    None,
                ),
            };
            // Nothing to pack is a mistake upstream (nm of a stripped file, an
            // empty pipe), not an empty table; a module-only blob is fine.
            if list.is_empty() && modules.is_none() {
                return Err(match &elf {
                    Some(bin) => CliError::input(
                        bin.display(),
                        "no function symbols in .symtab, its debug file's or .dynsym",
                    ),
                    None => CliError::input(
                        &input,
                        "no symbols: expected `ADDR TYPE NAME` lines (nm -n FILE | ksym-filter)",
                    ),
                });
            }
            // No linker script, no _etext: the end of the ELF's executable
            // sections bounds the last symbol instead (FORMAT.md §5.2).
            let bounds_elf = patch
                .as_ref()
                .map(|p| &p.0)
                .or(lines.as_ref().map(|l| &l.0));
            if let Some(elf) = bounds_elf
                // --elf's symbols end at their sizes.
                && !list.has_sizes()
                && !list.is_empty()
                && !(0..list.len()).any(|i| list.name(i) == b"_etext")
                // An ELF that cannot be read is refused below, by the step that
                // needs it, in its own words.
                && let Ok(Some(end)) = crate::elf::symbols::text_end(elf)
            {
                list.push(end, b'T', b"_etext")
                    .map_err(|e| CliError::input(elf.display(), e))?;
                if verbose {
                    crate::note!(
                        "ksym-pack: no _etext in the list: {end:#x}, the end of {}'s executable sections",
                        elf.display()
                    );
                }
            }
            let symbols = match format {
                Format::V1 => Symbols::V1(list),
                Format::V2 => Symbols::V2(Box::new(
                    V2Names::learn(list).map_err(|e| CliError::input(&input, e))?,
                )),
            };
            Ok((symbols, segments))
        };
        let v2_lines = lines.as_ref().filter(|_| format == Format::V2);
        let (symbols, (vmlinux, mods)) = join(read_list, || {
            join(
                || {
                    // A user-space binary's lines leave them out unless asked
                    // (llvm-symbolizer and perf print none).
                    let with_discriminators = elf.is_none() || discriminators;
                    v2_lines.map(|(path, _)| {
                        crate::elf::dwarf::read_source_table_naming(
                            path,
                            with_discriminators,
                            demangled.clone(),
                        )
                    })
                },
                || {
                    modules.as_ref().map(|(dir, skip)| {
                        // Modules carry their own DWARF: their lines are packed
                        // with or without vmlinux's (`--lines`).
                        crate::elf::kmod::read_modules(dir, true, *skip)
                    })
                },
            )
        });
        let (symbols, segments) = symbols?;
        if let Some(segments) = segments {
            v2.segments = segments;
        }
        // The kernel's identity: --build-id, else the note of the ELF it
        // was given (--lines, or --patch-elf: the image the blob goes into).
        let build_id_of = crate::elf::debugfile::build_id_of;
        if v2.build_id.is_empty()
            && let Some(id) = debuginfod
                .clone()
                .or_else(|| elf.as_deref().and_then(build_id_of))
                .or_else(|| lines.as_ref().and_then(|l| build_id_of(&l.0)))
                .or_else(|| patch.as_ref().and_then(|p| build_id_of(&p.0)))
        {
            v2.build_id = id;
        }
        // Declared here to outlive the writer that borrows it.
        let v1_list;
        let write: Box<WriteBlob<'_>> = match symbols {
            Symbols::V1(list) => {
                v1_list = list;
                let layout =
                    Layout::new(&v1_list, strategy).map_err(|e| CliError::input(&input, e))?;
                if verbose {
                    crate::note!("ksym-pack: {}", layout.describe());
                }
                let blob = layout.to_vec().map_err(|e| CliError::input(&input, e))?;
                Box::new(move |out| out.write_all(&blob))
            }
            Symbols::V2(names) => {
                let columns = lines.as_ref().is_some_and(|l| l.1);
                if let Some((r, (path, _))) = vmlinux.zip(lines.as_ref()) {
                    let list = names.list();
                    let addrs = (0..list.len()).map(|i| list.address(i));
                    let (table, desc, warning) = r
                        .and_then(|t| crate::elf::dwarf::checked_source_table(path, t, addrs))
                        .map_err(|e| CliError::input("--lines", e))?;
                    if verbose {
                        crate::note!("ksym-pack: {desc}");
                    }
                    if let Some(w) = warning {
                        crate::note!("ksym-pack: warning: {w}");
                    }
                    v2.lines = Some((table, columns));
                    // A blob a kernel embeds is read by its lean reader,
                    // which has no decoder for shared function names or
                    // coded rows. A `--gzip` file is inflated before it is
                    // read: DEFLATE does better on byte rows than on our
                    // Huffman bits (libstdc++: 218,256 bytes against 239,339).
                    v2.shared_names = patch.is_none() && asm.is_none();
                    v2.coded_rows = v2.shared_names && !gzip;
                }
                if let Some(r) = mods {
                    let set = r.map_err(|e| CliError::input("--modules", e))?;
                    v2.module_space =
                        Some(module_space(set, columns, v2.line_block_shift, verbose)?);
                }
                let packed = names.pack(&v2).map_err(|e| CliError::input(&input, e))?;
                // What the blob was packed from is freed while it is written.
                crate::reclaim::drop_later((names, v2.lines.take(), v2.module_space.take()));
                if verbose {
                    crate::note!("ksym-pack: {}", packed.describe());
                }
                Box::new(move |out| out.write_all(&packed.blob))
            }
        };
        let write: Box<WriteBlob<'_>> = match asm {
            Some(section) => {
                let mut blob = Vec::new();
                write(&mut blob).map_err(|e| CliError::input("blob", e))?;
                let text = assembly(&blob, &section);
                Box::new(move |out| out.write_all(&text))
            }
            None if gzip => {
                let mut blob = Vec::new();
                write(&mut blob).map_err(|e| CliError::input("blob", e))?;
                let gz = crate::gzip::compress(&blob).map_err(|e| CliError::input("--gzip", e))?;
                if verbose {
                    crate::note!(
                        "ksym-pack: --gzip: {} bytes, {:.3} of the blob's {}",
                        gz.len(),
                        gz.len() as f64 / blob.len().max(1) as f64,
                        blob.len()
                    );
                }
                Box::new(move |out| out.write_all(&gz))
            }
            None => write,
        };
        if let Some(dir) = store {
            let mut blob = Vec::new();
            write(&mut blob).map_err(|e| CliError::input("blob", e))?;
            let mut lists = Vec::new();
            if !v2.release.is_empty() {
                lists.push(
                    crate::store::layout::release_path(&v2.release)
                        .map_err(|e| CliError::input("--store", e))?,
                );
            }
            // A binary's file name, for reports that name it by that alone
            // (the kernel's fault lines); a build-id debug file's name
            // (`…/.build-id/ab/cdef.debug`) is not one it runs under.
            if let Some(name) = elf.as_ref().and_then(|e| e.file_name())
                && !name.as_encoded_bytes().ends_with(b".debug")
                && let Ok(p) = crate::store::layout::name_path(name.as_encoded_bytes())
            {
                lists.push(p);
            }
            let path = crate::store::write::put(&dir, &v2.build_id, &lists, &blob)
                .map_err(|e| CliError::input("--store", e))?;
            crate::note!("ksym-pack: {}", path.display());
            return Ok(());
        }
        match (output, patch) {
            (out, Some((elf, section))) => patch_elf(&elf, out.as_deref(), &section, &*write),
            (Some(path), None) => write_atomically(&path, &*write),
            (None, None) => {
                let mut out = io::BufWriter::with_capacity(IN_BUF, io::stdout().lock());
                write(&mut out).map_err(stdout_error)?;
                out.flush().map_err(stdout_error)
            }
        }
    }
}

impl PackJob {
    /// One job per `--elf` binary, each with its own DWARF when `--lines`
    /// named none, run in parallel (feature `parallel`). Every binary is
    /// tried; each failure is printed, naming its binary.
    ///
    /// Errors: how many binaries failed (their blobs are not stored).
    fn run_each_binary(self) -> Result<(), CliError> {
        let jobs: Vec<PackJob> = self
            .elf
            .iter()
            .map(|bin| {
                let mut job = self.clone();
                job.elf = vec![bin.clone()];
                job.lines = match &self.lines {
                    Some((path, columns)) if path == bin => Some((bin.clone(), *columns)),
                    // Each binary's own DWARF, where it has some.
                    Some((path, columns)) if path.as_os_str().is_empty() => {
                        let dirs = crate::elf::debugfile::DebugDirs {
                            dirs: self.debug_dirs.clone(),
                        };
                        let (found, _) =
                            crate::elf::debugfile::with_section(bin, ".debug_info", &dirs);
                        if crate::elf::debugfile::has_section(&found, ".debug_info") {
                            Some((bin.clone(), *columns))
                        } else {
                            crate::note!(
                                "ksym-pack: {}: no DWARF in it or a debug file: names only",
                                bin.display()
                            );
                            None
                        }
                    }
                    _ => None,
                };
                job
            })
            .collect();
        let run = |job: PackJob| {
            let bin = job.elf[0].clone();
            job.run().map_err(|e| (bin, e))
        };
        #[cfg(feature = "parallel")]
        let results: Vec<_> = {
            use rayon::prelude::*;
            jobs.into_par_iter().map(run).collect()
        };
        #[cfg(not(feature = "parallel"))]
        let results: Vec<_> = jobs.into_iter().map(run).collect();
        let total = results.len();
        let failed = results
            .into_iter()
            .filter_map(Result::err)
            .inspect(|(bin, e)| crate::note!("ksym-pack: {}: {e}", bin.display()))
            .count();
        match failed {
            0 => Ok(()),
            n => Err(CliError::input(
                "--elf",
                format!("{n} of {total} binaries failed (errors above); the others are stored"),
            )),
        }
    }
}

/// The blob as GNU assembler source (docs/kernel.md, step 5, "A two-pass
/// link"): in `section` (flags `"a"`), 8-byte aligned, between the global
/// labels `ksym_blob` and `ksym_blob_end`, as `.byte` lines of 16. Only
/// directives every GNU-syntax assembler and LLVM's take, on every
/// architecture, and `/* */` comments, so a kernel includes it with
/// `global_asm!` or its own assembler.
fn assembly(blob: &[u8], section: &str) -> Vec<u8> {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(blob.len() * 5 + 256);
    let _ = write!(
        s,
        "/* ksym blob, {} bytes, written by ksym-pack --asm (docs/kernel.md, step 5) */\n\
         \t.section {section},\"a\"\n\t.balign 8\n\t.globl ksym_blob\nksym_blob:\n",
        blob.len()
    );
    for row in blob.chunks(16) {
        s.push_str("\t.byte ");
        for (i, b) in row.iter().enumerate() {
            let _ = write!(s, "{}0x{b:02x}", if i > 0 { "," } else { "" });
        }
        s.push('\n');
    }
    s.push_str("\t.globl ksym_blob_end\nksym_blob_end:\n");
    s.into_bytes()
}

/// The symbols `ksym-pack` packs: a list for v1; for v2, a list with its
/// names' token codes already learnt.
enum Symbols {
    V1(SymbolList),
    V2(Box<V2Names>),
}

/// The `module_space` section (docs/FORMAT.md §16) of a module set, with
/// its skipped modules and notes on stderr.
fn module_space(
    set: crate::elf::kmod::ModuleSet,
    columns: bool,
    line_block_shift: Option<u8>,
    verbose: bool,
) -> Result<Vec<u8>, CliError> {
    for e in &set.skipped {
        crate::note!("ksym-pack: skipped {e}");
    }
    for n in &set.notes {
        crate::note!("ksym-pack: note: {n}");
    }
    let opts = V2Options {
        lines: set.lines.map(|t| (t, columns)),
        // Module space is read on the host alone.
        shared_names: true,
        coded_rows: true,
        line_block_shift,
        ..V2Options::default()
    };
    let inner = pack_v2(&set.symbols, &opts).map_err(|e| CliError::input("--modules", e))?;
    let bytes =
        crate::blob::v2::module_space::write::encode_module_space(&set.entries, &inner.blob)
            .map_err(|e| CliError::input("--modules", e))?;
    if verbose {
        crate::note!(
            "ksym-pack: modules: {} modules ({} skipped), {} bytes of code; module_space {} bytes ({:.3} B per code byte); inner {}",
            set.entries.len(),
            set.skipped.len(),
            set.code_bytes,
            bytes.len(),
            bytes.len() as f64 / set.code_bytes.max(1) as f64,
            inner.describe()
        );
    }
    Ok(bytes)
}

/// `--patch-elf`: the blob into `section` of `elf`, atomically, in place
/// or (`-o OUT`) into a patched copy at `out` with the image's
/// permissions, leaving `elf` as it was (a file cargo re-creates on every
/// build); with a report on stderr that no address moved.
fn patch_elf(
    elf: &Path,
    out: Option<&Path>,
    section: &str,
    write: &WriteBlob<'_>,
) -> Result<(), CliError> {
    let mut blob = Vec::new();
    write(&mut blob).map_err(|e| CliError::input("blob", e))?;
    let image = std::fs::read(elf).map_err(|e| CliError::input(elf.display(), e))?;
    let p = crate::elf::patch::patch_elf(&image, section, &blob)
        .map_err(|e| CliError::input(elf.display(), e))?;
    let dest = out.unwrap_or(elf);
    write_file_like(dest, &p.image, elf)?;
    crate::note!(
        "ksym-pack: {}: {}",
        dest.display(),
        p.report(section, blob.len())
    );
    Ok(())
}

#[cfg(test)]
mod asm_tests {
    use super::assembly;

    /// The `.byte` lines hold the blob byte for byte, between the labels,
    /// in the section asked for, 8-byte aligned.
    #[test]
    fn the_assembler_source_holds_the_blob() {
        let blob: Vec<u8> = (0..=40u8).collect();
        let text = String::from_utf8(assembly(&blob, ".ksym.table")).unwrap();
        assert!(text.contains("\t.section .ksym.table,\"a\"\n\t.balign 8\n"));
        let body = text.split("ksym_blob:\n").nth(1).unwrap();
        let (bytes, tail) = body.split_once("\t.globl ksym_blob_end\n").unwrap();
        assert_eq!(tail, "ksym_blob_end:\n");
        let back: Vec<u8> = bytes
            .lines()
            .flat_map(|l| l.strip_prefix("\t.byte ").unwrap().split(','))
            .map(|b| u8::from_str_radix(b.strip_prefix("0x").unwrap(), 16).unwrap())
            .collect();
        assert_eq!(back, blob);
        assert_eq!(bytes.lines().count(), 3);
    }
}
