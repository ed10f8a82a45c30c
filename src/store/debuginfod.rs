//! Fetching a kernel's ELF by build-id from debuginfod servers
//! (`ksym-pack --debuginfod BUILDID`): the servers of `DEBUGINFOD_URLS`
//! (blank-separated), each asked for `/buildid/ID/debuginfo`, then
//! `/executable`; the first answer whose GNU build-id note is ID wins. A
//! file already in debuginfod's own client cache
//! (`$DEBUGINFOD_CACHE_PATH`, else `~/.cache/debuginfod_client`) is used
//! without a request.

#[cfg(feature = "http")]
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use object::Object;

use super::StoreError;
use super::layout::hex;

/// The ELF file fetched: kept in a temporary file (a vmlinux with DWARF is
/// hundreds of MB; the DWARF reader reads it from disk), removed on drop,
/// or debuginfod's cached file.
#[derive(Debug)]
pub enum FetchedElf {
    /// Downloaded now.
    Temp(tempfile::NamedTempFile),
    /// Found in debuginfod's client cache.
    Cached(PathBuf),
}

impl FetchedElf {
    /// The file's path.
    pub fn path(&self) -> &std::path::Path {
        match self {
            FetchedElf::Temp(t) => t.path(),
            FetchedElf::Cached(p) => p,
        }
    }
}

fn note_matches(path: &std::path::Path, id: &[u8]) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let cache = object::ReadCache::new(file);
    let obj = object::File::parse(&cache).map_err(|e| format!("not an ELF file: {e}"))?;
    match obj.build_id() {
        Ok(Some(b)) if b == id => Ok(()),
        Ok(Some(b)) => Err(format!("its build-id note is {}, not {}", hex(b), hex(id))),
        _ => Err("it has no GNU build-id note".into()),
    }
}

/// The ELF of build-id `id`: from debuginfod's client cache, else from
/// the first server of `urls` (blank-separated base URLs) that has it.
/// `timeout` bounds each request.
///
/// Errors: no server given, none has the file (each server's answer is
/// listed), or what it served is not an ELF file with that build-id.
pub fn fetch_elf(urls: &str, id: &[u8], timeout: Duration) -> Result<FetchedElf, StoreError> {
    let idh = hex(id);
    let cache = std::env::var_os("DEBUGINFOD_CACHE_PATH")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/debuginfod_client"))
        });
    if let Some(c) = cache {
        for kind in ["debuginfo", "executable"] {
            let p = c.join(&idh).join(kind);
            if p.is_file() && note_matches(&p, id).is_ok() {
                return Ok(FetchedElf::Cached(p));
            }
        }
    }
    let servers: Vec<&str> = urls.split_ascii_whitespace().collect();
    if servers.is_empty() {
        return Err(StoreError::new(
            "--debuginfod: DEBUGINFOD_URLS is empty (blank-separated debuginfod server URLs)",
        ));
    }
    from_servers(&servers, &idh, id, timeout)
}

/// Without HTTP (cargo feature `http`), no server can be asked.
#[cfg(not(feature = "http"))]
fn from_servers(
    servers: &[&str],
    idh: &str,
    _: &[u8],
    _: Duration,
) -> Result<FetchedElf, StoreError> {
    Err(StoreError::new(format!(
        "--debuginfod {idh}: this build leaves out HTTP (cargo feature `http`); servers: {}",
        servers.join(" ")
    )))
}

/// Asks each server in turn for the debuginfo, then the executable, of
/// build-id `id` (hex `idh`); the first whose note matches wins.
#[cfg(feature = "http")]
fn from_servers(
    servers: &[&str],
    idh: &str,
    id: &[u8],
    timeout: Duration,
) -> Result<FetchedElf, StoreError> {
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .new_agent();
    let mut tried = Vec::new();
    for &base in servers {
        for kind in ["debuginfo", "executable"] {
            let url = format!("{}/buildid/{idh}/{kind}", base.trim_end_matches('/'));
            let mut resp = match agent.get(&url).call() {
                Ok(r) => r,
                Err(e) => {
                    tried.push(format!("{url}: {e}"));
                    continue;
                }
            };
            if resp.status().as_u16() != 200 {
                tried.push(format!("{url}: HTTP {}", resp.status().as_u16()));
                continue;
            }
            let mut tmp = tempfile::NamedTempFile::new()
                .map_err(|e| StoreError::new(format!("temporary file: {e}")))?;
            let mut body = resp.body_mut().with_config().limit(u64::MAX).reader();
            if let Err(e) = std::io::copy(&mut body, &mut tmp).and_then(|_| tmp.flush()) {
                tried.push(format!("{url}: {e}"));
                continue;
            }
            match note_matches(tmp.path(), id) {
                Ok(()) => return Ok(FetchedElf::Temp(tmp)),
                Err(e) => tried.push(format!("{url}: {e}")),
            }
        }
    }
    Err(StoreError::new(format!(
        "--debuginfod {idh}: no server has it: {}",
        tried.join("; ")
    )))
}
