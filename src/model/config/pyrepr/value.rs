//! A parsed Python value, printed back in Python's own syntax and serialised as JSON.

use std::fmt;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// Deeper than any real config; low enough that the recursive descent stays far from the
/// 2 MiB stack of a test or worker thread even in debug builds.
pub(crate) const MAX_DEPTH: usize = 256;

/// A value from a Python repr.
#[derive(Debug, Clone)]
pub enum PyValue {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An integer that fits in i64.
    Int(i64),
    /// An integer outside i64, kept as its decimal text so nothing is rounded.
    BigInt(String),
    /// A float, as Python printed it.
    Float(f64),
    /// A string, its escapes decoded.
    Str(String),
    /// `[…]`.
    List(Vec<PyValue>),
    /// `(…)`.
    Tuple(Vec<PyValue>),
    /// `{…}` without keys.
    Set(Vec<PyValue>),
    /// Kept in printed order: the order is what a person reading the log saw.
    Dict(Vec<(PyValue, PyValue)>),
    /// A call or constructor repr: `Name(arg, key=value)`.
    Call {
        /// The callee, dots included (`CompilationConfig`).
        name: String,
        /// Positional arguments, in order.
        args: Vec<PyValue>,
        /// Keyword arguments, in printed order.
        kwargs: Vec<(String, PyValue)>,
    },
    /// Anything printed as a bare token: `torch.bfloat16`, `<ModelImpl.AUTO: 'auto'>`,
    /// vLLM's unquoted `auto` or `org/Model-7B`.
    Name(String),
}

/// Python's `==` as far as configs go: `1e-05` and `0.00001` are one float; dicts and sets
/// ignore order. Unlike IEEE, NaN equals NaN, because a config that says `nan` on both
/// sides has not changed.
impl PartialEq for PyValue {
    fn eq(&self, other: &Self) -> bool {
        use PyValue::*;
        match (self, other) {
            (None, None) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (BigInt(a), BigInt(b)) => a == b,
            (Float(a), Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Str(a), Str(b)) | (Name(a), Name(b)) => a == b,
            (List(a), List(b)) | (Tuple(a), Tuple(b)) => a == b,
            (Set(a), Set(b)) => same_unordered(a, b, |x, y| x == y),
            (Dict(a), Dict(b)) => same_unordered(a, b, |x, y| x.0 == y.0 && x.1 == y.1),
            (
                Call {
                    name: n1,
                    args: a1,
                    kwargs: k1,
                },
                Call {
                    name: n2,
                    args: a2,
                    kwargs: k2,
                },
            ) => n1 == n2 && a1 == a2 && same_unordered(k1, k2, |x, y| x == y),
            _ => false,
        }
    }
}

pub(super) fn same_unordered<T>(a: &[T], b: &[T], eq: impl Fn(&T, &T) -> bool) -> bool {
    if a.len() != b.len() {
        return false;
    }
    // Reprs of the same config print in the same order, so the quadratic path is rare.
    if a.iter().zip(b).all(|(x, y)| eq(x, y)) {
        return true;
    }
    let mut used = vec![false; b.len()];
    a.iter().all(|x| {
        let hit = b.iter().enumerate().position(|(j, y)| !used[j] && eq(x, y));
        match hit {
            Some(j) => {
                used[j] = true;
                true
            }
            None => false,
        }
    })
}

impl PyValue {
    /// The repr Python itself would print, so tables show what the log showed, in one
    /// spelling: `1e-05` and `0.00001` both come out as `1e-05`.
    pub fn to_python_repr(&self) -> String {
        let mut out = String::new();
        self.write_repr(&mut out);
        out
    }

    fn write_repr(&self, out: &mut String) {
        match self {
            PyValue::None => out.push_str("None"),
            PyValue::Bool(true) => out.push_str("True"),
            PyValue::Bool(false) => out.push_str("False"),
            PyValue::Int(i) => out.push_str(&i.to_string()),
            PyValue::BigInt(s) | PyValue::Name(s) => out.push_str(s),
            PyValue::Float(f) => out.push_str(&py_float_repr(*f)),
            PyValue::Str(s) => write_py_str(s, out),
            PyValue::List(items) => write_items(out, "[", items, "]"),
            PyValue::Tuple(items) if items.len() == 1 => write_items(out, "(", items, ",)"),
            PyValue::Tuple(items) => write_items(out, "(", items, ")"),
            // `{}` is an empty dict in Python.
            PyValue::Set(items) if items.is_empty() => out.push_str("set()"),
            PyValue::Set(items) => write_items(out, "{", items, "}"),
            PyValue::Dict(pairs) => {
                out.push('{');
                for (n, (k, v)) in pairs.iter().enumerate() {
                    if n > 0 {
                        out.push_str(", ");
                    }
                    k.write_repr(out);
                    out.push_str(": ");
                    v.write_repr(out);
                }
                out.push('}');
            }
            PyValue::Call { name, args, kwargs } => {
                out.push_str(name);
                out.push('(');
                let mut first = true;
                for a in args {
                    if !first {
                        out.push_str(", ");
                    }
                    first = false;
                    a.write_repr(out);
                }
                for (k, v) in kwargs {
                    if !first {
                        out.push_str(", ");
                    }
                    first = false;
                    out.push_str(k);
                    out.push('=');
                    v.write_repr(out);
                }
                out.push(')');
            }
        }
    }
}

impl fmt::Display for PyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_python_repr())
    }
}

pub(super) fn write_items(out: &mut String, open: &str, items: &[PyValue], close: &str) {
    out.push_str(open);
    for (n, v) in items.iter().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        v.write_repr(out);
    }
    out.push_str(close);
}

pub(super) fn write_py_str(s: &str, out: &mut String) {
    // Python's own rule: single quotes unless that would need escaping and double would not.
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Python's `repr(float)`: shortest round-trip digits, fixed notation for exponents in
/// -4..16, otherwise `1e-05` style with a signed two-digit exponent.
pub(crate) fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` already gives the shortest round-trip digits, as Python does.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let body = if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                format!("{digits}{}.0", "0".repeat(int_len - digits.len()))
            } else {
                format!("{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{body}")
    } else {
        let m = if digits.len() == 1 {
            digits
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.unsigned_abs())
    }
}

/// Natural JSON: None → null, tuples and sets → arrays, dicts with string keys → objects
/// (other dicts → arrays of `[key, value]`), calls → `{"call": name, "args": [...],
/// "kwargs": {...}}`, big ints → strings. JSON has no inf/nan, and null already means
/// None, so non-finite floats become the strings `"inf"`, `"-inf"`, `"nan"`.
impl Serialize for PyValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PyValue::None => s.serialize_unit(),
            PyValue::Bool(b) => s.serialize_bool(*b),
            PyValue::Int(i) => s.serialize_i64(*i),
            PyValue::Float(f) if f.is_finite() => s.serialize_f64(*f),
            PyValue::Float(f) => s.serialize_str(&py_float_repr(*f)),
            PyValue::BigInt(t) | PyValue::Str(t) | PyValue::Name(t) => s.serialize_str(t),
            PyValue::List(v) | PyValue::Tuple(v) | PyValue::Set(v) => s.collect_seq(v),
            PyValue::Dict(pairs) => {
                if pairs.iter().all(|(k, _)| matches!(k, PyValue::Str(_))) {
                    let mut m = s.serialize_map(Some(pairs.len()))?;
                    for (k, v) in pairs {
                        m.serialize_entry(k, v)?;
                    }
                    m.end()
                } else {
                    s.collect_seq(pairs.iter().map(|(k, v)| (k, v)))
                }
            }
            PyValue::Call { name, args, kwargs } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("call", name)?;
                m.serialize_entry("args", args)?;
                m.serialize_entry("kwargs", &KwargsMap(kwargs))?;
                m.end()
            }
        }
    }
}

pub(super) struct KwargsMap<'a>(&'a [(String, PyValue)]);

impl Serialize for KwargsMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}
