//! The batch machinery: what the stream decided to do with each line of a
//! batch ([`plan`]), the module space it looks addresses up in
//! ([`modules`]), and what the lookups of one batch share: decoded rows
//! ([`rows`]) and decode-once caches of names and paths ([`cache`]).

pub(super) mod cache;
pub mod modules;
pub(super) mod plan;
pub(super) mod rows;
