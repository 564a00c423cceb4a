#![doc = include_str!("../README.md")]

// Dependencies point one way: skip at the bottom, the limits and their meter above it, the
// walk on top.
mod limits;
mod skip;
mod walk;

pub use limits::{Limits, RATIO_GRACE};
pub use skip::Skip;
pub use walk::{Container, HEAD, MAX_NAME, Report, Sink, container, walk};
