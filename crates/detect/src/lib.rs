#![doc = include_str!("../README.md")]

// The modules, bottom to top; each uses only modules above it in this list:
// - `types`: the shared vocabulary (findings, locations, options, windows, candidates);
// - `content`: format, encoding and binary sniffing;
// - `markup`: XML and HTML markup blanked byte for byte, so text keeps its offsets;
// - `context`: English and French context words, headers and keys as words;
// - `structure`: the incremental line, CSV and JSON trackers behind locations and labels;
// - `dates`: numeric and month-name dates;
// - `recognize`: the built-in recognizers, from an anchor to validated candidates;
// - `custom`: tenant classifiers, compiled into one automaton;
// - `score`: the confidence model;
// - `scan`: the `Detector` and its one pass over the text;
// - `stream`: gzip, decoding and overlapping windows in bounded memory, and the detector's
//   byte and streaming entry points;
// - `selector`: a type, category or classifier named by a governance condition (its tests run
//   the detector).
mod content;
mod context;
mod custom;
mod dates;
mod markup;
mod recognize;
mod scan;
mod score;
mod selector;
mod stream;
mod structure;
mod types;

pub use content::{Encoding, Format, Hint, SkipReason};
pub use context::{Context, Hits};
pub use custom::{
    ClassifierError, ClassifierSpec, Classifiers, DEFAULT_CONFIDENCE, DEFAULT_MATCH_DISTANCE,
    MAX_CLASSIFIERS, Validator,
};
pub use scan::Detector;
pub use selector::Selector;
pub use stream::{MAX_FINDINGS_PER_OBJECT, Report, Stream};
pub use types::{
    DEFAULT_MIN_CONFIDENCE, Evidence, Finding, FindingType, Kind, Location, MAX_FIELD, Options,
    TableUnit, column_letters,
};

#[cfg(test)]
mod tests;
