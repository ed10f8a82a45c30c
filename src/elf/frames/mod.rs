//! The frames at an address, from either of two sources that answer
//! alike: addr2line's `Context`, which parses each unit lazily when an
//! address reaches it (split DWARF, relocated module DWARF, and the
//! reference the tests compare with), or the [`model::Model`] that the
//! boundary walk reads in the same pass over each unit's DIEs and line
//! program (docs/lines-and-modules.md).
//!
//! - `lines`: a unit's line table and its rows' boundaries;
//! - `dies`: a unit's functions and inline trees and their edges;
//! - `model`: every unit, and addr2line's choice of unit.

mod dies;
mod lines;
pub(crate) mod model;

pub(crate) use dies::RangeEdges;
pub(crate) use lines::RowBounds;

use super::sweep::SplitOf;

/// One frame, innermost first: its function's DWARF name (`None` for a
/// function DIE without one, or a location without a function DIE),
/// whether it has a function DIE, and its location (for an inlined
/// frame's caller, the call site).
pub(crate) struct Frame<'a, R: gimli::Reader> {
    pub name: Option<R>,
    pub has_die: bool,
    pub location: Option<addr2line::Location<'a>>,
}

/// What the sweep asks of the DWARF.
pub(crate) trait FrameSource<R: gimli::Reader> {
    /// The location of `addr` in the first unit that has one.
    ///
    /// Errors: malformed DWARF met on the way.
    fn location(&self, addr: u64) -> gimli::Result<Option<addr2line::Location<'_>>>;

    /// The frames at `addr`, innermost first, onto `out` (nothing where no
    /// unit has a function or location there).
    ///
    /// Errors: malformed DWARF met on the way.
    fn frames<'a>(&'a self, addr: u64, out: &mut Vec<Frame<'a, R>>) -> gimli::Result<()>;
}

/// addr2line's context, loading split units through `split`.
pub(crate) struct Addr2line<'s, R: gimli::Reader> {
    pub ctx: addr2line::Context<R>,
    pub split: SplitOf<'s, R>,
}

impl<R: gimli::Reader> FrameSource<R> for Addr2line<'_, R> {
    fn location(&self, addr: u64) -> gimli::Result<Option<addr2line::Location<'_>>> {
        self.ctx.find_location(addr)
    }

    fn frames<'a>(&'a self, addr: u64, out: &mut Vec<Frame<'a, R>>) -> gimli::Result<()> {
        let mut lookup = self.ctx.find_frames(addr);
        let mut frames = loop {
            match lookup {
                addr2line::LookupResult::Output(frames) => break frames?,
                addr2line::LookupResult::Load { load, continuation } => {
                    let d = (self.split)(load.dwo_id, &load.parent).map(std::sync::Arc::new);
                    lookup = addr2line::LookupContinuation::resume(continuation, d);
                }
            }
        };
        while let Some(f) = frames.next()? {
            out.push(Frame {
                name: f.function.map(|n| n.name),
                has_die: f.dw_die_offset.is_some(),
                location: f.location,
            });
        }
        Ok(())
    }
}

impl<R: gimli::Reader, T: FrameSource<R>> FrameSource<R> for &T {
    fn location(&self, addr: u64) -> gimli::Result<Option<addr2line::Location<'_>>> {
        (**self).location(addr)
    }

    fn frames<'a>(&'a self, addr: u64, out: &mut Vec<Frame<'a, R>>) -> gimli::Result<()> {
        (**self).frames(addr, out)
    }
}
