//! The configuration a server printed at start-up, and the diff of two of them.
//!
//! A failing run and its baseline usually differ in one flag (`enable_custom_allreduce`
//! False → True); the diff is how that flag gets named.

pub mod pyrepr;

use std::collections::HashMap;

use crate::base::event::{Event, FieldValue};
use crate::grammar::{ConfigRule, ConfigSyntax, Knowledge};
use crate::model::config::pyrepr::{
    parse_call_lenient, parse_kwargs, parse_kwargs_lenient, parse_value_prefix, PyValue, ReprError,
};

/// Which log message a configuration came from: the grammar rule that read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSource {
    /// The grammar whose `[[config]]` rule read it.
    pub grammar: String,
    /// The text the configuration followed (`server_args=`, `with config: `).
    pub marker: String,
    pub syntax: ConfigSyntax,
    /// The server version the line printed, where its event captured one.
    pub version: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// In printed order, which is the order tables and diffs show.
    pub entries: Vec<(String, PyValue)>,
    pub source: ConfigSource,
}

/// A configuration read from a line that may have been cut short.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedConfig {
    pub config: Config,
    /// The line ended before the configuration did; `config` holds the entries before the
    /// cut, so a diff against it shows the missing keys as removed.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("no configuration marker of any grammar (`[[config]]`) in the line")]
    NotAConfigLine,
    /// Offsets are into the whole line.
    #[error("{0}")]
    Repr(#[from] ReprError),
    #[error("at byte {offset}: expected {expected}, found {found}")]
    Shape {
        offset: usize,
        expected: &'static str,
        found: String,
    },
}

impl Config {
    /// The configuration a `server_args` event carries, read with the config rules of its
    /// grammar (then of the others). A line a terminal hard-wrapped was split without
    /// losing characters, often inside a token: its continuation lines are joined back
    /// without a separator.
    pub fn from_event(e: &Event, know: &Knowledge) -> Result<ParsedConfig, ConfigError> {
        // A line past the event's message limit was cut by the scan: the entries before
        // the cut are read, and the configuration is marked as cut.
        let (kept, cut) = crate::grammar::strip_cut_mark(&e.message);
        let mut text = kept.to_string();
        if let Some(d) = &e.detail {
            if !cut {
                for line in d.lines() {
                    text.push_str(line);
                }
            }
        }
        let mut parsed = Self::parse(&text, know.config_rules(&e.grammar), true)?;
        parsed.truncated |= cut;
        parsed.config.source.version = e
            .field("version")
            .and_then(FieldValue::as_text)
            .map(str::to_string);
        Ok(parsed)
    }

    /// Read the configuration out of one log line (any prefix such as a timestamp is
    /// skipped) with the built-in grammars' config rules. A cut line is an error; see
    /// [`Config::from_line_lenient`].
    pub fn from_line(line: &str) -> Result<Config, ConfigError> {
        let parsed = Self::parse(
            line,
            crate::grammar::builtin_knowledge().configs.iter(),
            false,
        )?;
        Ok(parsed.config)
    }

    /// Like [`Config::from_line`], but a line cut short gives the entries before the cut.
    /// `python_dict` dumps are not salvaged: they are short and rarely cut.
    pub fn from_line_lenient(line: &str) -> Result<ParsedConfig, ConfigError> {
        Self::parse(
            line,
            crate::grammar::builtin_knowledge().configs.iter(),
            true,
        )
    }

    /// The first line that carries a configuration, read leniently.
    pub fn find_in_lines<'a>(
        lines: impl IntoIterator<Item = &'a str>,
    ) -> Option<Result<ParsedConfig, ConfigError>> {
        lines
            .into_iter()
            .map(Self::from_line_lenient)
            .find(|r| !matches!(r, Err(ConfigError::NotAConfigLine)))
    }

    /// The value of `key`; the first one if a key were printed twice.
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Reads the line with the first rule whose marker it holds.
    fn parse<'a>(
        line: &str,
        rules: impl Iterator<Item = &'a ConfigRule>,
        lenient: bool,
    ) -> Result<ParsedConfig, ConfigError> {
        for rule in rules {
            let Some(pos) = line.find(&rule.marker) else {
                continue;
            };
            let base = pos + rule.marker.len();
            let body = &line[base..];
            let (entries, truncated) = match rule.syntax {
                ConfigSyntax::PythonCall => python_call(body, base, lenient)?,
                ConfigSyntax::PythonKwargs => {
                    if lenient {
                        let l = parse_kwargs_lenient(body).map_err(|e| e.shifted(base))?;
                        (l.kwargs, l.truncated)
                    } else {
                        (parse_kwargs(body).map_err(|e| e.shifted(base))?, false)
                    }
                }
                ConfigSyntax::PythonDict => (python_dict(line, base)?, false),
                ConfigSyntax::RustDebug => rust_debug(body, base, lenient)?,
            };
            return Ok(ParsedConfig {
                config: Config {
                    entries,
                    source: ConfigSource {
                        grammar: rule.grammar.clone(),
                        marker: rule.marker.clone(),
                        syntax: rule.syntax,
                        version: None,
                    },
                },
                truncated,
            });
        }
        Err(ConfigError::NotAConfigLine)
    }
}

fn python_dict(line: &str, base: usize) -> Result<Vec<(String, PyValue)>, ConfigError> {
    let (v, _) = parse_value_prefix(&line[base..]).map_err(|e| e.shifted(base))?;
    let PyValue::Dict(pairs) = v else {
        return Err(shape_error(line, base, "a dict"));
    };
    Ok(pairs
        .into_iter()
        .map(|(k, v)| match k {
            PyValue::Str(s) => (s, v),
            other => (other.to_python_repr(), v),
        })
        .collect())
}

type Entries = (Vec<(String, PyValue)>, bool);

fn python_call(body: &str, base: usize, lenient: bool) -> Result<Entries, ConfigError> {
    let call = parse_call_lenient(body).map_err(|e| e.shifted(base))?;
    if call.truncated && !lenient {
        // Re-parse strictly for the error, which says where the line ends and what it
        // still needed.
        let e = match parse_value_prefix(body) {
            Err(e) => e.shifted(base),
            Ok(_) => unreachable_cut(body.len() + base),
        };
        return Err(ConfigError::Repr(e));
    }
    if !call.args.is_empty() {
        return Err(ConfigError::Shape {
            offset: base,
            expected: "keyword arguments only",
            found: format!("{} positional argument(s)", call.args.len()),
        });
    }
    Ok((call.kwargs, call.truncated))
}

// The lenient and strict parsers share their grammar, so a strict success after a
// lenient cut cannot happen; answer with a truncation error rather than a panic anyway.
fn unreachable_cut(offset: usize) -> ReprError {
    ReprError {
        offset,
        expected: "`)`".into(),
        found: None,
        kind: crate::model::config::pyrepr::ReprErrorKind::Truncated,
    }
}

fn shape_error(line: &str, base: usize, expected: &'static str) -> ConfigError {
    let found: String = line[base..].chars().take(20).collect();
    ConfigError::Shape {
        offset: base,
        expected,
        found: format!("{found:?}"),
    }
}

/// Rust's `{:?}` of a struct, `Args { model_id: "x", num_shard: Some(2), port: 80 }`:
/// field names to values, `Some(x)` read as `x`, enum variants as names. A cut line gives
/// the fields before the cut when `lenient`.
fn rust_debug(body: &str, base: usize, lenient: bool) -> Result<Entries, ConfigError> {
    let mut p = RustDebug {
        s: body.as_bytes(),
        text: body,
        i: 0,
        base,
    };
    p.ws();
    p.ident();
    p.ws();
    if !p.eat(b'{') {
        return Err(p.error("`{` after the struct name"));
    }
    let mut entries = Vec::new();
    loop {
        p.ws();
        if p.eat(b'}') {
            return Ok((entries, false));
        }
        if p.at_end() {
            break;
        }
        let key = p.ident().to_string();
        p.ws();
        if key.is_empty() || !p.eat(b':') {
            if p.at_end() {
                break;
            }
            return Err(p.error("`field: value`"));
        }
        p.ws();
        match p.value(0) {
            Ok(v) => entries.push((key, v)),
            Err(e) if p.at_end() => {
                if lenient {
                    return Ok((entries, true));
                }
                return Err(e);
            }
            Err(e) => return Err(e),
        }
        p.ws();
        if !p.eat(b',') && p.peek() != Some(b'}') {
            if p.at_end() {
                break;
            }
            return Err(p.error("`,` or `}`"));
        }
    }
    if lenient {
        Ok((entries, true))
    } else {
        Err(ConfigError::Repr(ReprError {
            offset: base + body.len(),
            expected: "`}`".into(),
            found: None,
            kind: crate::model::config::pyrepr::ReprErrorKind::Truncated,
        }))
    }
}

struct RustDebug<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
    base: usize,
}

/// Nesting past this is refused rather than recursed into (hostile input).
const MAX_DEBUG_DEPTH: usize = 64;

impl RustDebug<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }
    fn ident(&mut self) -> &str {
        let start = self.i;
        while self.peek().is_some_and(|c| {
            c.is_ascii_alphanumeric()
                || c == b'_'
                || c == b':' && self.s.get(self.i + 1) == Some(&b':')
                || c == b':' && start < self.i && self.s[self.i - 1] == b':'
        }) {
            self.i += 1;
        }
        self.text.get(start..self.i).unwrap_or("")
    }
    fn error(&self, expected: &str) -> ConfigError {
        let found: String = self
            .text
            .get(self.i..)
            .unwrap_or("")
            .chars()
            .take(20)
            .collect();
        ConfigError::Shape {
            offset: self.base + self.i,
            expected: "a Rust Debug struct",
            found: format!("{found:?} where {expected} was expected"),
        }
    }
    /// What is missing where `expected` should stand: the line was cut there, or it
    /// holds something else.
    fn missing(&self, expected: &str) -> ConfigError {
        if self.at_end() {
            self.cut()
        } else {
            self.error(expected)
        }
    }
    fn cut(&self) -> ConfigError {
        ConfigError::Repr(ReprError {
            offset: self.base + self.i,
            expected: "a value".into(),
            found: None,
            kind: crate::model::config::pyrepr::ReprErrorKind::Truncated,
        })
    }
    fn value(&mut self, depth: usize) -> Result<PyValue, ConfigError> {
        if depth > MAX_DEBUG_DEPTH {
            return Err(self.error("less nesting"));
        }
        self.ws();
        match self.peek() {
            None => Err(self.cut()),
            Some(b'"') => self.string(),
            Some(b'[') => {
                self.i += 1;
                Ok(PyValue::List(self.seq(b']', depth)?))
            }
            Some(b'(') => {
                self.i += 1;
                Ok(PyValue::Tuple(self.seq(b')', depth)?))
            }
            Some(b'{') => {
                self.i += 1;
                let mut pairs = Vec::new();
                loop {
                    self.ws();
                    if self.eat(b'}') {
                        return Ok(PyValue::Dict(pairs));
                    }
                    let k = self.value(depth + 1)?;
                    self.ws();
                    if !self.eat(b':') {
                        return Err(self.missing("`:`"));
                    }
                    let v = self.value(depth + 1)?;
                    pairs.push((k, v));
                    self.ws();
                    if !self.eat(b',') && self.peek() != Some(b'}') {
                        return Err(self.missing("`,` or `}`"));
                    }
                }
            }
            Some(c) if c == b'-' || c.is_ascii_digit() => {
                let start = self.i;
                self.i += 1;
                while self.peek().is_some_and(|c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'+' | b'_')
                }) {
                    self.i += 1;
                }
                if self.at_end() {
                    // A number that runs to the end of a cut line may miss digits.
                    return Err(self.cut());
                }
                let t = &self.text[start..self.i];
                Ok(t.parse::<i64>()
                    .map(PyValue::Int)
                    .or_else(|_| t.parse::<f64>().map(PyValue::Float))
                    .unwrap_or_else(|_| PyValue::Name(t.to_string())))
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let name = self.ident().to_string();
                self.ws();
                if self.at_end() {
                    return Err(self.cut());
                }
                match (name.as_str(), self.peek()) {
                    ("Some", Some(b'(')) => {
                        self.i += 1;
                        let v = self.value(depth + 1)?;
                        self.ws();
                        if !self.eat(b')') {
                            return Err(self.missing("`)`"));
                        }
                        Ok(v)
                    }
                    (_, Some(b'(')) => {
                        self.i += 1;
                        let args = self.seq(b')', depth)?;
                        Ok(PyValue::Call {
                            name,
                            args,
                            kwargs: Vec::new(),
                        })
                    }
                    (_, Some(b'{')) => {
                        self.i += 1;
                        let mut kwargs = Vec::new();
                        loop {
                            self.ws();
                            if self.eat(b'}') {
                                return Ok(PyValue::Call {
                                    name,
                                    args: Vec::new(),
                                    kwargs,
                                });
                            }
                            let k = self.ident().to_string();
                            self.ws();
                            if k.is_empty() || !self.eat(b':') {
                                return Err(self.missing("`field: value`"));
                            }
                            let v = self.value(depth + 1)?;
                            kwargs.push((k, v));
                            self.ws();
                            if !self.eat(b',') && self.peek() != Some(b'}') {
                                return Err(self.missing("`,` or `}`"));
                            }
                        }
                    }
                    ("None", _) => Ok(PyValue::None),
                    ("true", _) => Ok(PyValue::Bool(true)),
                    ("false", _) => Ok(PyValue::Bool(false)),
                    _ => Ok(PyValue::Name(name)),
                }
            }
            Some(_) => Err(self.error("a value")),
        }
    }
    fn seq(&mut self, close: u8, depth: usize) -> Result<Vec<PyValue>, ConfigError> {
        let mut out = Vec::new();
        loop {
            self.ws();
            if self.eat(close) {
                return Ok(out);
            }
            out.push(self.value(depth + 1)?);
            self.ws();
            if !self.eat(b',') && self.peek() != Some(close) {
                return Err(self.missing("`,` or a closing bracket"));
            }
        }
    }
    fn string(&mut self) -> Result<PyValue, ConfigError> {
        self.i += 1;
        let mut out = String::new();
        let rest = self.text.get(self.i..).unwrap_or("");
        let mut chars = rest.char_indices();
        while let Some((k, c)) = chars.next() {
            match c {
                '"' => {
                    self.i += k + 1;
                    return Ok(PyValue::Str(out));
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, other)) => out.push(other),
                    None => break,
                },
                c => out.push(c),
            }
        }
        self.i = self.s.len();
        Err(self.cut())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub key: String,
    pub old: PyValue,
    pub new: PyValue,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigDiff {
    /// In the order of `a`'s keys.
    pub changed: Vec<Change>,
    /// Keys only in `b`, in `b`'s order.
    pub added: Vec<(String, PyValue)>,
    /// Keys only in `a`, in `a`'s order.
    pub removed: Vec<(String, PyValue)>,
}

impl ConfigDiff {
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.added.is_empty() && self.removed.is_empty()
    }
}

fn index(c: &Config) -> HashMap<&str, &PyValue> {
    let mut m = HashMap::with_capacity(c.entries.len());
    for (k, v) in &c.entries {
        m.entry(k.as_str()).or_insert(v);
    }
    m
}

/// What changed from `a` to `b`. Values compare as Python would (`1e-05 == 0.00001`,
/// dict order ignored) but with no tolerance: 0.9 → 0.91 is a change, as it may be the
/// one that matters. `1` and `1.0` differ: a changed type is worth showing.
pub fn diff(a: &Config, b: &Config) -> ConfigDiff {
    let (ia, ib) = (index(a), index(b));
    let mut out = ConfigDiff::default();
    let mut seen = std::collections::HashSet::new();
    for (k, old) in &a.entries {
        if !seen.insert(k.as_str()) {
            continue;
        }
        match ib.get(k.as_str()) {
            Some(new) if *new != old => out.changed.push(Change {
                key: k.clone(),
                old: old.clone(),
                new: (*new).clone(),
            }),
            Some(_) => {}
            None => out.removed.push((k.clone(), old.clone())),
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (k, new) in &b.entries {
        if seen.insert(k.as_str()) && !ia.contains_key(k.as_str()) {
            out.added.push((k.clone(), new.clone()));
        }
    }
    out
}

/// One setting of PyTorch's caching allocator that differs between two runs' snapshots
/// (`allocator_settings`); `None` on a side that does not record the key.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocatorSettingChange {
    /// Dotted for nested settings: `roundup_power2_divisions.64`.
    pub key: String,
    pub baseline: Option<String>,
    pub candidate: Option<String>,
}

/// Compares two snapshots' `allocator_settings` key by key, as server arguments are
/// compared: expandable segments, the per-process fraction, the garbage-collection
/// threshold, `max_split_size`, `PYTORCH_CUDA_ALLOC_CONF` itself. Keys in order.
pub fn diff_allocator_settings(
    baseline: &serde_json::Value,
    candidate: &serde_json::Value,
) -> Vec<AllocatorSettingChange> {
    fn flatten(
        prefix: &str,
        v: &serde_json::Value,
        out: &mut std::collections::BTreeMap<String, String>,
    ) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flatten(&key, x, out);
                }
            }
            serde_json::Value::Null if prefix.is_empty() => {}
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let (mut a, mut b) = Default::default();
    flatten("", baseline, &mut a);
    flatten("", candidate, &mut b);
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| AllocatorSettingChange {
            key: k.clone(),
            baseline: a.get(k).cloned(),
            candidate: b.get(k).cloned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocator_settings_compared_key_by_key() {
        let a = serde_json::json!({"expandable_segments": false, "max_split_size": -1,
            "roundup_power2_divisions": {"1": 0, "64": 0}, "PYTORCH_CUDA_ALLOC_CONF": ""});
        let b = serde_json::json!({"expandable_segments": true, "max_split_size": -1,
            "roundup_power2_divisions": {"1": 0, "64": 4},
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
            "per_process_memory_fraction": 0.5});
        let d = diff_allocator_settings(&a, &b);
        let keys: Vec<&str> = d.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "PYTORCH_CUDA_ALLOC_CONF",
                "expandable_segments",
                "per_process_memory_fraction",
                "roundup_power2_divisions.64"
            ]
        );
        assert_eq!(d[1].baseline.as_deref(), Some("false"));
        assert_eq!(d[1].candidate.as_deref(), Some("true"));
        assert_eq!(d[2].baseline, None);
        assert!(diff_allocator_settings(&a, &a).is_empty());
    }

    // First lines of fixtures/gpu/tp8_baseline/server.log and tp8_custom_ar/server.log.
    const BASELINE: &str = "[2026-11-29 09:18:09] server_args=ServerArgs(model_path='synthetic-61L', tp_size=8, pp_size=1, mem_fraction_static=0.9, cuda_graph_max_bs=128, enable_custom_allreduce=False)";
    const CUSTOM_AR: &str = "[2026-11-29 09:18:30] server_args=ServerArgs(model_path='synthetic-61L', tp_size=8, pp_size=1, mem_fraction_static=0.9, cuda_graph_max_bs=128, enable_custom_allreduce=True)";

    const VLLM: &str = "(EngineCore_DP0 pid=4242) INFO 10-15 12:00:00 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='x', speculative_config=None, tokenizer='x', dtype=torch.bfloat16, max_seq_len=4096, tensor_parallel_size=8, disable_custom_all_reduce=False, served_model_name=x, compilation_config={\"level\":3,\"debug_dump_path\":\"\",\"use_cudagraph\":true}";

    fn cfg(line: &str) -> Config {
        Config::from_line(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    #[test]
    fn real_fixture_lines_differ_in_custom_allreduce_only() {
        let (a, b) = (cfg(BASELINE), cfg(CUSTOM_AR));
        assert_eq!(a.source.syntax, ConfigSyntax::PythonCall);
        assert_eq!(a.source.marker, "server_args=");
        assert_eq!(a.entries.len(), 6);
        let d = diff(&a, &b);
        assert_eq!(
            d.changed,
            [Change {
                key: "enable_custom_allreduce".into(),
                old: PyValue::Bool(false),
                new: PyValue::Bool(true),
            }]
        );
        assert!(d.added.is_empty() && d.removed.is_empty());
        assert!(diff(&a, &a).is_empty());
    }

    #[test]
    fn diff_orders_and_kinds() {
        let a = cfg("server_args=ServerArgs(a=1, b=2, c=3, d=4, e=5)");
        let b = cfg("server_args=ServerArgs(z=0, e=50, c=3, b=20, y=9)");
        let d = diff(&a, &b);
        let changed: Vec<&str> = d.changed.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(changed, ["b", "e"]);
        let removed: Vec<&str> = d.removed.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(removed, ["a", "d"]);
        let added: Vec<&str> = d.added.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(added, ["z", "y"]);
        assert_eq!(d.changed[1].old, PyValue::Int(5));
        assert_eq!(d.changed[1].new, PyValue::Int(50));
    }

    #[test]
    fn float_equality_is_exact_but_spelling_free() {
        let a = cfg("server_args=ServerArgs(eps=1e-05, m=0.9, x=nan, d={'a': 1, 'b': 2})");
        let b = cfg("server_args=ServerArgs(eps=0.00001, m=0.90, x=nan, d={'b': 2, 'a': 1})");
        assert!(diff(&a, &b).is_empty());
        let c = cfg("server_args=ServerArgs(eps=1.00001e-05, m=0.9, x=nan, d={'a': 1, 'b': 2})");
        let d = diff(&a, &c);
        assert_eq!(d.changed.len(), 1);
        assert_eq!(d.changed[0].key, "eps");
        let e = cfg("server_args=ServerArgs(eps=1e-05, m=1, x=nan, d={'a': 1, 'b': 2})");
        assert_eq!(diff(&a, &e).changed[0].key, "m");
    }

    #[test]
    fn vllm_engine_config_line() {
        let c = cfg(VLLM);
        assert_eq!(c.source.syntax, ConfigSyntax::PythonKwargs);
        assert_eq!(c.entries.len(), 9);
        assert_eq!(
            c.get("dtype"),
            Some(&PyValue::Name("torch.bfloat16".into()))
        );
        assert_eq!(c.get("served_model_name"), Some(&PyValue::Name("x".into())));
        let other = VLLM.replace(
            "disable_custom_all_reduce=False",
            "disable_custom_all_reduce=True",
        );
        let d = diff(&c, &cfg(&other));
        assert_eq!(d.changed.len(), 1);
        assert_eq!(d.changed[0].key, "disable_custom_all_reduce");
    }

    #[test]
    fn vllm_non_default_args_line() {
        let c = cfg("INFO 10-15 12:00:00 [utils.py:233] non-default args: {'model': 'x', 'tensor_parallel_size': 8, 'disable_log_stats': True}");
        assert_eq!(c.source.syntax, ConfigSyntax::PythonDict);
        assert_eq!(c.get("tensor_parallel_size"), Some(&PyValue::Int(8)));
        assert!(matches!(
            Config::from_line("non-default args: ['x']"),
            Err(ConfigError::Shape { .. })
        ));
    }

    #[test]
    fn errors_point_into_the_line() {
        assert_eq!(
            Config::from_line("[09:18:12 TP5] Init torch distributed begin."),
            Err(ConfigError::NotAConfigLine)
        );
        let cut = &BASELINE[..BASELINE.find("cuda_graph").unwrap() + 4];
        match Config::from_line(cut) {
            Err(ConfigError::Repr(e)) => {
                assert_eq!(
                    e.kind,
                    crate::model::config::pyrepr::ReprErrorKind::Truncated
                );
                assert_eq!(e.offset, cut.len());
            }
            other => panic!("{other:?}"),
        }
        let bad = "x server_args=ServerArgs(a=[1 2])";
        match Config::from_line(bad) {
            Err(ConfigError::Repr(e)) => assert_eq!(&bad[e.offset..], "2])"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Config::from_line("server_args=ServerArgs('pos')"),
            Err(ConfigError::Shape { .. })
        ));
    }

    #[test]
    fn lenient_salvages_cut_lines() {
        let cut = &BASELINE[..BASELINE.find("cuda_graph").unwrap() + 4];
        let p = Config::from_line_lenient(cut).unwrap();
        assert!(p.truncated);
        assert_eq!(p.config.entries.len(), 4);
        let d = diff(&cfg(BASELINE), &p.config);
        assert_eq!(d.removed.len(), 2);
        assert!(d.changed.is_empty());
        let whole = Config::from_line_lenient(BASELINE).unwrap();
        assert!(!whole.truncated);
        for n in (0..=BASELINE.len()).filter(|n| BASELINE.is_char_boundary(*n)) {
            let _ = Config::from_line(&BASELINE[..n]);
            let _ = Config::from_line_lenient(&BASELINE[..n]);
            let _ = Config::from_line(&VLLM[..n.min(VLLM.len())]);
            let _ = Config::from_line_lenient(&VLLM[..n.min(VLLM.len())]);
        }
    }

    // A launcher's `Args { … }` (TGI's wording, our values), with Some/None, a nested
    // enum variant, a list and an escaped string.
    const RUST_ARGS: &str = "2026-04-02T08:15:01.204118Z  INFO text_generation_launcher: Args { model_id: \"/models/heron-13b\", revision: None, sharded: Some(true), num_shard: Some(2), quantize: Some(Awq), max_batch_prefill_tokens: Some(8192), cuda_memory_fraction: 0.95, cuda_graphs: Some([1, 2, 4]), hostname: \"a\\\"b\", json_output: false }";

    #[test]
    fn rust_debug_structs_read_as_fields() {
        let rule = ConfigRule {
            grammar: "launcher".into(),
            marker: "Args ".into(),
            syntax: ConfigSyntax::RustDebug,
        };
        let read = |line: &str, lenient: bool| Config::parse(line, [&rule].into_iter(), lenient);
        let cfg = |line: &str| {
            read(line, false)
                .map(|p| p.config)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let c = cfg(RUST_ARGS);
        assert_eq!(c.source.syntax, ConfigSyntax::RustDebug);
        // Ten fields in the line, counted by hand.
        assert_eq!(c.entries.len(), 10);
        assert_eq!(
            c.get("model_id"),
            Some(&PyValue::Str("/models/heron-13b".into()))
        );
        assert_eq!(c.get("revision"), Some(&PyValue::None));
        assert_eq!(c.get("sharded"), Some(&PyValue::Bool(true)));
        assert_eq!(c.get("num_shard"), Some(&PyValue::Int(2)));
        assert_eq!(c.get("quantize"), Some(&PyValue::Name("Awq".into())));
        assert_eq!(c.get("cuda_memory_fraction"), Some(&PyValue::Float(0.95)));
        assert_eq!(
            c.get("cuda_graphs"),
            Some(&PyValue::List(vec![
                PyValue::Int(1),
                PyValue::Int(2),
                PyValue::Int(4)
            ]))
        );
        assert_eq!(c.get("hostname"), Some(&PyValue::Str("a\"b".into())));
        let other = RUST_ARGS.replace("num_shard: Some(2)", "num_shard: Some(4)");
        let d = diff(&c, &cfg(&other));
        assert_eq!(d.changed.len(), 1);
        assert_eq!(d.changed[0].key, "num_shard");
        // Cut inside `max_batch_prefill_tokens`: the five fields before it survive.
        let cut = &RUST_ARGS[..RUST_ARGS.find("Some(8192)").unwrap() + 7];
        let p = read(cut, true).unwrap();
        assert!(p.truncated);
        assert_eq!(p.config.entries.len(), 5);
        assert!(read(cut, false).is_err());
        for n in (0..=RUST_ARGS.len()).filter(|n| RUST_ARGS.is_char_boundary(*n)) {
            let _ = read(&RUST_ARGS[..n], true);
            let _ = read(&RUST_ARGS[..n], false);
        }
    }

    #[test]
    fn finds_the_config_among_log_lines() {
        let log = [
            "[2026-11-29 09:18:12 TP5] Init torch distributed begin.",
            BASELINE,
            CUSTOM_AR,
        ];
        let found = Config::find_in_lines(log).unwrap().unwrap();
        assert_eq!(found.config, cfg(BASELINE));
        assert!(Config::find_in_lines(["nothing here"]).is_none());
    }
}
