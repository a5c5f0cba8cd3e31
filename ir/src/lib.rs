//! # profconv-ir
//!
//! The intermediate representation every profconv plugin reads or writes: columnar tables in the
//! spirit of the Firefox Profiler's processed format (seed 002).
//!
//! * [`StringTable`]: every string once, in one blob.
//! * [`FuncTable`]: functions (name, file, line, resource). The call tree is over funcs.
//! * [`FrameTable`]: places inside a function (address, line); many frames may share a func.
//! * [`StackTable`]: a prefix tree of frames; `prefix[i] < i`.
//! * [`SampleTable`]: a stack, an optional time, and one value per [`ValueType`].
//!
//! Values are `i64` fixed point (see [`ValueType::decimals`]). A [`ValueKind::Weight`] column is a
//! cost that sums up the tree (samples, ticks, nanoseconds, bytes); a [`ValueKind::Count`] column
//! counts events of a node itself, which is how **exact call counts** are represented: a column
//! named `calls` where a sample carries the number of calls that entered its stack.
//!
//! Memory grows with distinct stacks: builders deduplicate funcs, frames and stacks, and
//! aggregated samples keep one row per distinct stack. No algorithm here recurses per frame.

pub mod builder;
pub mod calltree;
mod children;
pub mod diff;
pub mod profile;
pub mod strings;
pub mod testing;
pub mod text;
pub mod transform;

pub use builder::{BulkBuilder, PathStart, PieceMaps, ProfileBuilder, TraceBuilder};
pub use calltree::{CallNodePath, CallNodes, CallTree};
pub use profile::{
    FrameTable, FuncTable, IrError, NO_ADDRESS, NONE, Profile, ProfileRef, SampleTable, StackTable,
    StringsRef, ValueKind, ValueType, flags, format_fixed, path_sums, write_fixed, zeros,
};
pub use strings::{StrId, StringTable};
pub use text::{TreeOrder, TreeTextOptions, render_tree, write_tree};
pub use transform::{Applied, Fraction, Transform};
