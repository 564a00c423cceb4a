//! Strict reading of JSON and YAML documents into JSON values, for everything a client sends
//! as a document (governance policies, classifiers, YAML request bodies).
//!
//! One reader for both syntaxes, with one set of rules: a size and a depth limit, one
//! document whose top level is a mapping, no duplicate key, no NUL character, and in YAML no
//! anchor, alias or tag (an alias could multiply a small body into millions of values). YAML is
//! read by one parser, yaml-rust2's event stream, which builds the value itself: a second
//! parser that resolved aliases after a first had checked for them could read a body
//! differently than the check did.
//!
//! Every problem is an RFC 6901 JSON pointer and a reason that never holds a value from the
//! document.
//!
//! ```
//! use docread::{Limits, Syntax, read};
//!
//! let limits = Limits { max_bytes: 1024, max_depth: 8 };
//! let (value, problems) = read(b"name: employee_id\nregex: 'EMP-[0-9]{6}'\n", Syntax::Yaml, limits)
//!     .expect("a well-formed document");
//! assert!(problems.is_empty());
//! assert_eq!(value["name"], "employee_id");
//!
//! let (_, problems) = read(b"a: &x 1\nb: *x\n", Syntax::Yaml, limits).unwrap();
//! assert_eq!(problems[1].pointer, "/b");
//! ```

mod lines;
mod problem;
mod read;

pub use lines::yaml_line;

pub use problem::{Pointer, Problem};
pub use read::{Limits, MAX_PROBLEMS, Syntax, read};
