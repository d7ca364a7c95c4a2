//! A configuration value written back as its server wrote it: Python's repr for the
//! Python servers (`False`, `'auto'`, `None`), Rust's `{:?}` for a server whose grammar
//! reads its configuration as `rust_debug` (`false`, `"auto"`, `Args { k: v }`).

use super::pyrepr::{py_float_repr, PyValue};
use crate::grammar::ConfigSyntax;

/// The language whose literals a configuration was printed in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Spelling {
    #[default]
    Python,
    Rust,
    Json,
}

impl Spelling {
    pub(crate) fn of(syntax: ConfigSyntax) -> Spelling {
        match syntax {
            ConfigSyntax::RustDebug => Spelling::Rust,
            ConfigSyntax::Json => Spelling::Json,
            ConfigSyntax::PythonCall | ConfigSyntax::PythonKwargs | ConfigSyntax::PythonDict => {
                Spelling::Python
            }
        }
    }
}

impl PyValue {
    /// The value as the server's language prints it.
    pub(crate) fn spelled(&self, spelling: Spelling) -> String {
        match spelling {
            Spelling::Python => self.to_python_repr(),
            Spelling::Rust => {
                let mut out = String::new();
                write_rust(self, &mut out);
                out
            }
            Spelling::Json => {
                let mut out = String::new();
                write_json(self, &mut out);
                out
            }
        }
    }
}

/// `open`, then each item written by `write` with `, ` between them, then `close`: the
/// lists, sets, maps and structs of both spellings below.
fn write_seq<T>(
    out: &mut String,
    open: &str,
    items: &[T],
    close: &str,
    mut write: impl FnMut(&T, &mut String),
) {
    out.push_str(open);
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        write(item, out);
    }
    out.push_str(close);
}

/// A map's `key: value` pairs, each side written by `write`.
fn write_pairs(out: &mut String, pairs: &[(PyValue, PyValue)], write: fn(&PyValue, &mut String)) {
    write_seq(out, "{", pairs, "}", |(k, v), out| {
        write(k, out);
        out.push_str(": ");
        write(v, out);
    });
}

/// JSON, for a configuration read as `json`: strings in double quotes with JSON's
/// escapes, `true`/`false`/`null`, lists and objects (a shape JSON has no word for, a
/// tuple or a call, is written as a list or in Python's repr).
fn write_json(v: &PyValue, out: &mut String) {
    match v {
        PyValue::None => out.push_str("null"),
        PyValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        PyValue::Int(i) => out.push_str(&i.to_string()),
        PyValue::Str(s) => out.push_str(&serde_json::Value::from(s.as_str()).to_string()),
        PyValue::List(v) | PyValue::Tuple(v) | PyValue::Set(v) => {
            write_seq(out, "[", v, "]", write_json)
        }
        PyValue::Dict(pairs) => write_pairs(out, pairs, write_json),
        other => out.push_str(&other.to_python_repr()),
    }
}

/// Rust's `{:?}`, for the shapes a `rust_debug` configuration is read into (`Some(x)` was
/// read as `x` and is written so).
fn write_rust(v: &PyValue, out: &mut String) {
    let items = |out: &mut String, open: &str, items: &[PyValue], close: &str| {
        write_seq(out, open, items, close, write_rust)
    };
    match v {
        PyValue::None => out.push_str("None"),
        PyValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        PyValue::Int(i) => out.push_str(&i.to_string()),
        PyValue::BigInt(s) | PyValue::Name(s) => out.push_str(s),
        // Rust prints a float with at least one decimal (`1.0`), as Python does, and
        // exponents without sign padding (`1e-5`, Python `1e-05`).
        PyValue::Float(f) if f.is_finite() => out.push_str(&format!("{f:?}")),
        PyValue::Float(f) => out.push_str(&py_float_repr(*f)),
        PyValue::Str(s) => out.push_str(&format!("{s:?}")),
        PyValue::List(v) => items(out, "[", v, "]"),
        PyValue::Tuple(v) if v.len() == 1 => items(out, "(", v, ",)"),
        PyValue::Tuple(v) => items(out, "(", v, ")"),
        PyValue::Set(v) => items(out, "{", v, "}"),
        PyValue::Dict(pairs) => write_pairs(out, pairs, write_rust),
        // A struct (`Args { k: v }`) was read as a call with keywords only.
        PyValue::Call { name, args, kwargs } if args.is_empty() && !kwargs.is_empty() => {
            write_seq(out, &format!("{name} {{ "), kwargs, " }", |(k, v), out| {
                out.push_str(k);
                out.push_str(": ");
                write_rust(v, out);
            });
        }
        PyValue::Call { name, args, .. } => items(out, &format!("{name}("), args, ")"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::Config;

    #[test]
    fn rust_values_are_written_as_rust_prints_them() {
        // A TGI launcher line (`Args { … }`, read as `rust_debug`); each expected value is
        // the line's own text, `Some(…)` unwrapped.
        let line = r#"INFO text_generation_launcher: Args { model_id: "/m/heron", sharded: Some(true), trust_remote_code: false, revision: None, cuda_memory_fraction: 1.0, tolerance: 1e-5, ports: [3000, 3001], quantize: Some(Quantize { bits: 4 }) }"#;
        let c = Config::from_line(line).unwrap();
        assert_eq!(c.source.syntax, ConfigSyntax::RustDebug);
        let spelled = |k: &str, s: Spelling| c.get(k).unwrap().spelled(s);
        let rust = Spelling::of(c.source.syntax);
        assert_eq!(spelled("model_id", rust), r#""/m/heron""#);
        assert_eq!(spelled("sharded", rust), "true");
        assert_eq!(spelled("trust_remote_code", rust), "false");
        assert_eq!(spelled("revision", rust), "None");
        assert_eq!(spelled("cuda_memory_fraction", rust), "1.0");
        assert_eq!(spelled("tolerance", rust), "1e-5");
        assert_eq!(spelled("ports", rust), "[3000, 3001]");
        assert_eq!(spelled("quantize", rust), "Quantize { bits: 4 }");
        // Python's spelling of the same values, as a Python server would print them.
        assert_eq!(spelled("trust_remote_code", Spelling::Python), "False");
        assert_eq!(spelled("model_id", Spelling::Python), "'/m/heron'");
        assert_eq!(spelled("tolerance", Spelling::Python), "1e-05");
    }
}
