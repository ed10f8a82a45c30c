//! The line recognisers: what kind of line the resolver reads (bare
//! address, perf frame, kernel log line, `Code:` line) and where on it the
//! code references are, behind whatever log prefix. Nothing here looks an
//! address up or writes output; that is `batch/` and `print/`.

pub(super) mod bytes;
pub(super) mod kinds;
pub(super) mod logline;
pub(super) mod oops;
pub(super) mod prefix;
