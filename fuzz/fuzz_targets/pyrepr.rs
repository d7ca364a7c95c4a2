//! The Python-repr parser (`server_args=ServerArgs(…)`, vLLM config lines): any text
//! gives a value or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rankscope::model::config::pyrepr;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = pyrepr::parse_value(&text);
    let _ = pyrepr::parse_kwargs(&text);
    let _ = pyrepr::parse_kwargs_lenient(&text);
    let _ = pyrepr::parse_call_lenient(&text);
});
