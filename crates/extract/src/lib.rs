#![doc = include_str!("../README.md")]

// Dependencies point one way: skip at the bottom; the limits and their meter, and the sink,
// above it; the columnar reader (Parquet) above those, and the Avro reader, which renders
// values as it does; the workbook readers (sheet, on which xls and ods place their cells, and
// cfb under xls) and the document readers beside them, sharing xml and odf; the walk on top.
// The rewriters (edit's types, the Parquet, Avro and office rewriters, and rewrite's dispatch)
// stand beside the walk and read through the same readers, so an editor sees what a scan saw.
mod avro;
pub mod avro_rewrite;
mod cfb;
mod columnar;
mod document;
mod edit;
pub mod isolation;
mod limits;
mod odf;
mod ods;
mod office;
mod pdf;
mod rewrite;
mod sheet;
mod sink;
mod skip;
mod walk;
mod xls;
mod xml;

pub use columnar::rewrite as parquet_rewrite;
pub use edit::{Change, Editor, Refusal};
pub use limits::{Limits, RATIO_GRACE};
pub use pdf::child::init as init_isolation;
pub use rewrite::{Rewritable, rewritable, rewrite};
pub use sink::{Column, MAX_NAME, Sink, TableUnit};
pub use skip::Skip;
pub use walk::{Container, HEAD, Report, container, walk};
