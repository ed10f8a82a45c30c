//! The batch machinery: what the stream decided to do with each line of a
//! batch ([`plan`]), the module space it looks addresses up in
//! ([`modules`]), and what the lookups of one batch share: decoded rows
//! ([`rows`]), decode-once caches of names and paths ([`cache`]) and the
//! line table's row blocks kept decoded ([`blocks`]).

pub(super) mod blocks;
pub(super) mod cache;
pub mod modules;
pub(super) mod plan;
pub(super) mod rows;
