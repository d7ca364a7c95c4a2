//! The configuration a server printed at start-up, and the diff of two of them.
//!
//! A failing run and its baseline usually differ in one flag (`enable_custom_allreduce`
//! False → True); the diff is how that flag gets named.

mod escaped;
pub mod pyrepr;
mod sample;
mod spelling;

pub use sample::read_sample;

pub(crate) use spelling::Spelling;

use std::collections::HashMap;

use crate::base::event::{Event, FieldValue};
use crate::grammar::{ConfigEscape, ConfigRule, ConfigSyntax, Knowledge};
use crate::model::config::pyrepr::{
    parse_call_lenient, parse_kwargs, parse_kwargs_lenient, parse_value_prefix, PyValue, ReprError,
};

/// Which log message a configuration came from: the grammar rule that read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigSource {
    /// The grammar whose `[[config]]` rule read it.
    pub(crate) grammar: String,
    /// The text the configuration followed (`server_args=`, `with config: `).
    pub(crate) marker: String,
    pub(crate) syntax: ConfigSyntax,
    /// The server version the line printed, where its event captured one.
    pub(crate) version: Option<String>,
}

/// A server's configuration as its log printed it: key and value, in printed order.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// In printed order, which is the order tables and diffs show.
    pub entries: Vec<(String, PyValue)>,
    pub(crate) source: ConfigSource,
}

/// A configuration read from a line that may have been cut short.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedConfig {
    /// The entries read (those before the cut, for a cut line).
    pub config: Config,
    /// The line ended before the configuration did; `config` holds the entries before the
    /// cut, so a diff against it shows the missing keys as removed.
    pub(crate) truncated: bool,
}

/// Why a configuration line could not be read as one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "the #[error] texts say what each variant and field is"
)]
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

impl ConfigError {
    /// The same error with its offset (if it has one) moved by `f`.
    fn map_offset(self, f: impl Fn(usize) -> usize) -> ConfigError {
        match self {
            ConfigError::Repr(mut e) => {
                e.offset = f(e.offset);
                ConfigError::Repr(e)
            }
            ConfigError::Shape {
                offset,
                expected,
                found,
            } => ConfigError::Shape {
                offset: f(offset),
                expected,
                found,
            },
            ConfigError::NotAConfigLine => ConfigError::NotAConfigLine,
        }
    }

    /// The error stands at JSON's escaped quote `\"` of `line`: the configuration is
    /// inside a JSON string, which its rule reads with `escaped = "json"`.
    pub(crate) fn at_escaped_quote(&self, line: &str) -> bool {
        (self.offset())
            .and_then(|at| line.get(at..))
            .is_some_and(|t| t.starts_with("\\\""))
    }

    /// Where in the text read the error stands, if it names a place.
    pub(crate) fn offset(&self) -> Option<usize> {
        match self {
            ConfigError::Repr(e) => Some(e.offset),
            ConfigError::Shape { offset, .. } => Some(*offset),
            ConfigError::NotAConfigLine => None,
        }
    }
}

impl Config {
    /// The configuration a `server_args` event carries, read with the config rules of its
    /// grammar (then of the others). A line a terminal hard-wrapped was split without
    /// losing characters, often inside a token: its continuation lines are joined back
    /// without a separator.
    pub(crate) fn from_event(e: &Event, know: &Knowledge) -> Result<ParsedConfig, ConfigError> {
        // A line past the event's message limit was cut by the scan: the entries before
        // the cut are read, and the configuration is marked as cut.
        let (kept, cut) = crate::grammar::strip_cut_mark(&e.message);
        let mut text = kept.to_string();
        if let Some(d) = e.detail() {
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

    /// A run's configuration: its first configuration line, with the server's version
    /// where any line of the same grammar printed one. vLLM prints it on `vLLM API server
    /// version …` and on the engine's `… LLM engine (v…) with config:` line, but its first
    /// configuration line is often `non-default args: {…}`, which names none.
    pub(crate) fn of_events(
        events: &[Event],
        know: &Knowledge,
    ) -> Option<Result<ParsedConfig, ConfigError>> {
        let mut config = events
            .iter()
            .find(|e| e.kind == crate::base::event::kind::SERVER_ARGS)
            .map(|e| Self::from_event(e, know))?;
        if let Ok(c) = &mut config {
            if c.config.source.version.is_none() {
                c.config.source.version = server_version(events, &c.config.source.grammar);
            }
        }
        Some(config)
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

    /// The configuration one line's message carries, read with the config rules of
    /// `grammar` (then of the others): a `server_args` sample of `grammars check`.
    pub(crate) fn from_message(
        message: &str,
        grammar: &str,
        know: &Knowledge,
    ) -> Result<ParsedConfig, ConfigError> {
        Self::parse(message, know.config_rules(grammar), true)
    }

    /// Reads the line with the first rule whose marker it holds.
    fn parse<'a>(
        line: &str,
        rules: impl Iterator<Item = &'a ConfigRule>,
        lenient: bool,
    ) -> Result<ParsedConfig, ConfigError> {
        Self::parse_with_rule(line, rules, lenient)
            .map(|(parsed, _)| parsed)
            .map_err(|(e, _)| e)
    }

    /// `parse`, and the rule whose marker the line held (for `grammars check`, which
    /// names the rule that failed). Its error offsets are bytes of `line`.
    fn parse_with_rule<'a>(
        line: &str,
        rules: impl Iterator<Item = &'a ConfigRule>,
        lenient: bool,
    ) -> Result<(ParsedConfig, &'a ConfigRule), (ConfigError, Option<&'a ConfigRule>)> {
        for rule in rules {
            let Some(pos) = line.find(&rule.marker) else {
                continue;
            };
            let base = pos + rule.marker.len();
            let read = match rule.escaped {
                None => read_syntax(rule.syntax, line, base, lenient),
                // Read in the unescaped text, whose offsets are mapped back to the line's.
                Some(ConfigEscape::Json) => {
                    let u = escaped::Unescaped::json(&line[base..]);
                    read_syntax(rule.syntax, &u.text, 0, lenient)
                        .map_err(|e| e.map_offset(|at| base + u.original(at)))
                }
            };
            let (entries, truncated) = read.map_err(|e| (e, Some(rule)))?;
            let parsed = ParsedConfig {
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
            };
            return Ok((parsed, rule));
        }
        Err((ConfigError::NotAConfigLine, None))
    }
}

/// The entries after a marker: `line[base..]` read in `syntax`; offsets are `line`'s.
fn read_syntax(
    syntax: ConfigSyntax,
    line: &str,
    base: usize,
    lenient: bool,
) -> Result<Entries, ConfigError> {
    let body = &line[base..];
    Ok(match syntax {
        ConfigSyntax::PythonCall => python_call(body, base, lenient)?,
        ConfigSyntax::PythonKwargs => {
            if lenient {
                let l = parse_kwargs_lenient(body).map_err(|e| e.shifted(base))?;
                (l.kwargs, l.truncated)
            } else {
                (parse_kwargs(body).map_err(|e| e.shifted(base))?, false)
            }
        }
        ConfigSyntax::PythonDict | ConfigSyntax::Json => (python_dict(line, base)?, false),
        ConfigSyntax::RustDebug => rust_debug(body, base, lenient)?,
    })
}

/// The first version a line of `grammar` printed: its `server_version` line or a
/// configuration line that names one (`field version`).
pub(crate) fn server_version(events: &[Event], grammar: &str) -> Option<String> {
    events
        .iter()
        .filter(|e| e.grammar == grammar)
        .filter(|e| {
            matches!(
                e.kind.as_str(),
                crate::base::event::kind::SERVER_ARGS | crate::base::event::kind::SERVER_VERSION
            )
        })
        .find_map(|e| e.field("version").and_then(FieldValue::as_text))
        .map(str::to_string)
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
        // A struct inside `Some(…)` is an optional value: it stays whole.
        let optional = body.get(p.i..).is_some_and(|t| t.starts_with("Some("));
        match p.value(0) {
            Ok(v) if optional => entries.push((key, v)),
            Ok(v) => flatten_struct(key, v, &mut entries),
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

/// A nested struct's fields become dotted keys (`sched: SchedOpts { policy: Fcfs }` is
/// `sched.policy`), so `diff` compares, and a suspect names, each nested setting; a
/// tuple struct, a variant with values and a struct inside `Some(…)` stay one value.
fn flatten_struct(key: String, v: PyValue, entries: &mut Vec<(String, PyValue)>) {
    match v {
        PyValue::Call { args, kwargs, .. } if args.is_empty() && !kwargs.is_empty() => {
            for (k, v) in kwargs {
                flatten_struct(format!("{key}.{k}"), v, entries);
            }
        }
        v => entries.push((key, v)),
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
                        // `{:#?}` prints `Some(` / `7,` / `)`: a trailing comma.
                        if self.eat(b',') {
                            self.ws();
                        }
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

/// One key whose value differs.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The key.
    pub key: String,
    /// Its value in the first configuration.
    pub old: PyValue,
    /// Its value in the second.
    pub new: PyValue,
}

/// Two configurations compared key by key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigDiff {
    /// In the order of `a`'s keys.
    pub changed: Vec<Change>,
    /// Keys only in `b`, in `b`'s order.
    pub added: Vec<(String, PyValue)>,
    /// Keys only in `a`, in `a`'s order.
    pub removed: Vec<(String, PyValue)>,
    /// How `a` and `b` wrote their values (a `Change`'s old and removed keys are `a`'s,
    /// its new and added keys `b`'s), so they are printed in the server's own syntax.
    pub(crate) spelling: (Spelling, Spelling),
}

impl ConfigDiff {
    /// No key changed, was added or was removed.
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
    let mut out = ConfigDiff {
        spelling: (Spelling::of(a.source.syntax), Spelling::of(b.source.syntax)),
        ..ConfigDiff::default()
    };
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
pub(crate) struct AllocatorSettingChange {
    /// Dotted for nested settings: `roundup_power2_divisions.64`.
    pub(crate) key: String,
    pub(crate) baseline: Option<String>,
    pub(crate) candidate: Option<String>,
}

/// Compares two snapshots' `allocator_settings` key by key, as server arguments are
/// compared: expandable segments, the per-process fraction, the garbage-collection
/// threshold, `max_split_size`, `PYTORCH_CUDA_ALLOC_CONF` itself. Keys in order.
pub(crate) fn diff_allocator_settings(
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
mod tests;
