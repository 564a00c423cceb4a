//! The governance policy reader and validator: any bytes, read as YAML and as JSON, are a
//! document or a list of problems. A problem never quotes the document.
#![no_main]

use policies::document::{Syntax, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    for syntax in [Syntax::Yaml, Syntax::Json] {
        let _ = parse(bytes, syntax);
    }
});
