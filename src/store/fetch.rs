//! Reading a store: a directory (`DIR`, `file://DIR`) or an HTTP(S) server
//! (`http://…`, `https://…`: a static server, a bucket, debuginfod), with a
//! local cache for remote stores under `$XDG_CACHE_HOME/ksym` (else
//! `~/.cache/ksym`) in the same layout.
//!
//! Cache rules: a fetched blob passes the deep check before it is used
//! and cached; a cached blob is checked by its CRCs (and section shapes)
//! before each use, and fetched again when that fails; a blob the
//! server does not have is remembered for [`MISS_TTL`] (a marker file), so
//! a stream of traces from an unknown kernel asks once; release lists are
//! not cached (they grow as builds are added). Every request has a time
//! limit ([`Store::open`]'s `timeout`): a slow or dead server gives an error,
//! never a hang.

#[cfg(feature = "http")]
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::StoreError;
use super::layout::{blob_path, hex, name_path, parse_release_list, release_path};
use crate::blob::Kallsyms;
use crate::blobfile::AlignedBlob;

/// How long a miss is remembered.
pub const MISS_TTL: Duration = Duration::from_secs(300);

/// The largest blob or list accepted from a server.
pub const MAX_FETCH: u64 = 1 << 31;

/// Where a store's files come from.
#[derive(Debug)]
enum Source {
    Dir(PathBuf),
    #[cfg(feature = "http")]
    Http {
        base: String,
        agent: ureq::Agent,
    },
}

/// A store, opened for reading.
#[derive(Debug)]
pub struct Store {
    source: Source,
    /// The cache directory, for remote stores.
    cache: Option<PathBuf>,
}

/// `$XDG_CACHE_HOME/ksym`, else `$HOME/.cache/ksym`.
pub fn default_cache_dir() -> Option<PathBuf> {
    match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => Some(PathBuf::from(x).join("ksym")),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/ksym")),
    }
}

/// Checks that `blob` opens (header, CRCs, shapes) and, with `deep`,
/// passes the deep check (every name, row and table: what a fetched blob
/// gets once before it is cached).
fn check_blob(blob: AlignedBlob, deep: bool) -> Result<AlignedBlob, String> {
    let k = Kallsyms::from_blob(blob.as_bytes(), None, None).map_err(|e| e.to_string())?;
    if deep {
        k.verify().map_err(|e| e.to_string())?;
    }
    Ok(blob)
}

impl Store {
    /// Opens `spec`: `DIR`, `file://DIR`, `http://…` or `https://…`.
    /// `timeout` bounds each HTTP request (connection, headers and body);
    /// `cache` is where remote blobs are kept ([`default_cache_dir`]).
    ///
    /// Errors: a directory that does not exist.
    pub fn open(
        spec: &str,
        timeout: Duration,
        cache: Option<PathBuf>,
    ) -> Result<Store, StoreError> {
        #[cfg(not(feature = "http"))]
        if spec.starts_with("http://") || spec.starts_with("https://") {
            let _ = (timeout, cache);
            return Err(StoreError::new(format!(
                "store {spec}: this build leaves out HTTP stores (cargo feature `http`)"
            )));
        }
        #[cfg(feature = "http")]
        if spec.starts_with("http://") || spec.starts_with("https://") {
            let agent = ureq::Agent::config_builder()
                .timeout_global(Some(timeout))
                .http_status_as_error(false)
                .build()
                .new_agent();
            return Ok(Store {
                source: Source::Http {
                    base: spec.trim_end_matches('/').to_owned(),
                    agent,
                },
                cache,
            });
        }
        let dir = PathBuf::from(spec.strip_prefix("file://").unwrap_or(spec));
        if !dir.is_dir() {
            return Err(StoreError::new(format!(
                "store {}: not a directory",
                dir.display()
            )));
        }
        Ok(Store {
            source: Source::Dir(dir),
            cache: None,
        })
    }

    /// The file at `rel` in the store; `None` when the store lacks it.
    fn get(&self, rel: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match &self.source {
            Source::Dir(d) => {
                let p = d.join(rel);
                match std::fs::read(&p) {
                    Ok(b) => Ok(Some(b)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(StoreError::new(format!("{}: {e}", p.display()))),
                }
            }
            #[cfg(feature = "http")]
            Source::Http { base, agent } => {
                let url = format!("{base}/{rel}");
                let mut resp = agent
                    .get(&url)
                    .call()
                    .map_err(|e| StoreError::new(format!("{url}: {e}")))?;
                match resp.status().as_u16() {
                    200 => {}
                    404 => return Ok(None),
                    s => return Err(StoreError::new(format!("{url}: HTTP {s}"))),
                }
                let mut body = Vec::new();
                resp.body_mut()
                    .with_config()
                    .limit(MAX_FETCH)
                    .reader()
                    .read_to_end(&mut body)
                    .map_err(|e| StoreError::new(format!("{url}: {e}")))?;
                Ok(Some(body))
            }
        }
    }

    /// What the store's URL or directory is, for messages.
    pub fn describe(&self) -> String {
        match &self.source {
            Source::Dir(d) => d.display().to_string(),
            #[cfg(feature = "http")]
            Source::Http { base, .. } => base.clone(),
        }
    }

    /// The blob of build-id `id`, checked (it opens and passes the deep
    /// check), inflated when the store keeps it gzip-compressed
    /// (FORMAT.md §17); `None` when the store has none.
    ///
    /// Errors: the store cannot be read (HTTP errors, timeouts), or the
    /// blob it serves is damaged (it is then neither used nor cached).
    pub fn blob(&self, id: &[u8]) -> Result<Option<AlignedBlob>, StoreError> {
        let rel = blob_path(id);
        let cached = self.cache.as_ref().map(|c| c.join(&rel));
        if let Some(p) = &cached {
            if let Ok(blob) = crate::gzip::read_blob(p) {
                if let Ok(b) = check_blob(blob, false) {
                    return Ok(Some(b));
                }
                // Damaged in the cache: fetched again below.
                let _ = std::fs::remove_file(p);
            }
            if fresh_miss(&miss_marker(p)) {
                return Ok(None);
            }
        }
        let Some(bytes) = self.get(&rel)? else {
            if let Some(p) = &cached {
                let m = miss_marker(p);
                let _ = std::fs::create_dir_all(m.parent().unwrap_or(Path::new(".")));
                let _ = std::fs::write(&m, b"");
            }
            return Ok(None);
        };
        let blob = crate::gzip::blob_from(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|b| check_blob(b, true))
            .map_err(|e| {
                StoreError::new(format!(
                    "{}/{rel}: the blob of build-id {} is damaged, not used: {e}",
                    self.describe(),
                    hex(id)
                ))
            })?;
        if let Some(p) = &cached {
            // A cache that cannot be written only costs a fetch next time.
            // Kept inflated: a compressed blob saves bytes on the wire, and
            // the cache would pay its inflating at every use.
            let _ = super::write::replace_file(p, blob.as_bytes());
            let _ = std::fs::remove_file(miss_marker(p));
        }
        Ok(Some(blob))
    }

    /// The build-ids listed for `release` (empty when the store lists none).
    ///
    /// Errors: the release cannot be a path segment, or the store cannot
    /// be read.
    pub fn release_ids(&self, release: &[u8]) -> Result<Vec<Vec<u8>>, StoreError> {
        self.list(&release_path(release)?)
    }

    /// The build-ids of the binaries stored under file name `name` (empty
    /// when the store lists none: also for a name no list can have).
    ///
    /// Errors: the store cannot be read.
    pub fn name_ids(&self, name: &[u8]) -> Result<Vec<Vec<u8>>, StoreError> {
        match name_path(name) {
            Ok(p) => self.list(&p),
            Err(_) => Ok(Vec::new()),
        }
    }

    fn list(&self, path: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(self
            .get(path)?
            .map(|t| parse_release_list(&t))
            .unwrap_or_default())
    }
}

fn miss_marker(blob: &Path) -> PathBuf {
    blob.with_file_name(".ksym.miss")
}

fn fresh_miss(marker: &Path) -> bool {
    std::fs::metadata(marker)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < MISS_TTL)
}
