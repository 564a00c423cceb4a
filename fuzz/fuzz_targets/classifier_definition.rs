//! Custom classifier definitions: any text, read as JSON and as YAML, is a definition that
//! validates (its regex compiled within the size limits) or a refusal with a reason.
#![no_main]

use detect::ClassifierSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    for spec in [ClassifierSpec::from_json(text), ClassifierSpec::from_yaml(text)]
        .into_iter()
        .flatten()
    {
        let _ = spec.validate();
    }
});
