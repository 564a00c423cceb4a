#![doc = include_str!("../README.md")]

// Dependencies point one way: skip at the bottom; the limits and their meter, and the sink,
// above it; the columnar reader (Parquet) above those, and the Avro reader, which renders
// values as it does; the walk on top.
mod avro;
mod columnar;
mod document;
mod edit;
mod limits;
mod office;
mod pdf;
mod rewrite;
mod sheet;
mod sink;
mod skip;
mod walk;

pub use columnar::rewrite as parquet_rewrite;
pub use edit::{Change, Editor, Refusal};
pub use limits::{Limits, RATIO_GRACE};
pub use rewrite::{Rewritable, rewritable, rewrite};
pub use sink::{Column, MAX_NAME, Sink, TableUnit};
pub use skip::Skip;
pub use walk::{Container, HEAD, Report, container, walk};
