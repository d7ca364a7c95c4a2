//! Parser for the Python reprs that inference servers print at start-up.
//!
//! SGLang logs `server_args=ServerArgs(...)`, vLLM logs `... with config: a=1, b='x', ...`
//! and `non-default args: {...}`. Those are reprs, not JSON: single-quoted strings, tuples,
//! `None`, enum reprs like `<ModelImpl.AUTO: 'auto'>`, and in vLLM's case values printed
//! without `!r` (`tokenizer_mode=auto`, `served_model_name=org/Model-7B`) mixed with
//! embedded JSON (`compilation_config={"level":3,...}`). Logs are also cut mid-line, so
//! every failure reports a byte offset, and truncation is told apart from bad syntax.

mod parse;
mod value;

use std::fmt;

use nom::{
    error::{ErrorKind, ParseError},
    IResult,
};

use parse::*;
pub use value::*;

/// What went wrong, where (a byte offset into the text given to the parser).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ReprError {
    pub(crate) offset: usize,
    /// What the parser needed there, e.g. "`,` or `]`".
    pub(crate) expected: String,
    /// The character found instead; `None` at the end of the input.
    pub(crate) found: Option<char>,
    pub(crate) kind: ReprErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReprErrorKind {
    /// Not a repr we understand.
    Syntax,
    /// The input ended inside a value: the usual shape of a log line cut short.
    Truncated,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl fmt::Display for ReprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.found) {
            (ReprErrorKind::TooDeep, _) => write!(
                f,
                "at byte {}: nested deeper than {MAX_DEPTH} levels",
                self.offset
            ),
            (ReprErrorKind::Truncated, _) | (_, None) => write!(
                f,
                "input ends at byte {}, expected {}",
                self.offset, self.expected
            ),
            (ReprErrorKind::Syntax, Some(c)) => write!(
                f,
                "at byte {}: expected {}, found {c:?}",
                self.offset, self.expected
            ),
        }
    }
}

impl ReprError {
    /// Offsets are relative to the text parsed; callers that cut it out of a longer line
    /// shift them so the offset points into the line.
    pub(crate) fn shifted(mut self, by: usize) -> Self {
        self.offset += by;
        self
    }
}

// ---------------------------------------------------------------------------------------
// The grammar. Values dispatch on their first character rather than through `alt`, which
// keeps error positions exact and the per-level stack frames small.

#[derive(Debug)]
pub(super) struct PErr<'a> {
    input: &'a str,
    expected: &'static str,
    too_deep: bool,
}

impl<'a> ParseError<&'a str> for PErr<'a> {
    fn from_error_kind(input: &'a str, kind: ErrorKind) -> Self {
        PErr {
            input,
            // Only nom's own leaves get here; naming the leaf is the best on offer.
            expected: match kind {
                ErrorKind::Digit => "a digit",
                ErrorKind::Char | ErrorKind::OneOf => "a punctuation mark",
                ErrorKind::TakeWhile1 => "a name",
                _ => "a value",
            },
            too_deep: false,
        }
    }

    fn append(_: &'a str, _: ErrorKind, other: Self) -> Self {
        other
    }

    // The branch that got furthest explains the failure best.
    fn or(self, other: Self) -> Self {
        if other.input.len() <= self.input.len() {
            other
        } else {
            self
        }
    }
}

pub(super) type PResult<'a, T> = IResult<&'a str, T, PErr<'a>>;

pub(super) fn fail<'a, T>(input: &'a str, expected: &'static str) -> PResult<'a, T> {
    Err(nom::Err::Error(PErr {
        input,
        expected,
        too_deep: false,
    }))
}

pub(super) fn to_repr_error(whole: &str, e: nom::Err<PErr<'_>>) -> ReprError {
    match e {
        nom::Err::Error(p) | nom::Err::Failure(p) => {
            let offset = whole.len().saturating_sub(p.input.len());
            let found = p.input.chars().next();
            let kind = if p.too_deep {
                ReprErrorKind::TooDeep
            } else if found.is_none() {
                ReprErrorKind::Truncated
            } else {
                ReprErrorKind::Syntax
            };
            ReprError {
                offset,
                expected: p.expected.to_string(),
                found,
                kind,
            }
        }
        // Only streaming parsers say Incomplete; none is used, but a cut is what it means.
        nom::Err::Incomplete(_) => ReprError {
            offset: whole.len(),
            expected: "more input".into(),
            found: None,
            kind: ReprErrorKind::Truncated,
        },
    }
}

pub(super) fn err_at(whole: &str, at: &str, expected: &'static str) -> ReprError {
    to_repr_error(
        whole,
        nom::Err::Error(PErr {
            input: at,
            expected,
            too_deep: false,
        }),
    )
}

/// Parse the whole of `s` as one value; leading and trailing whitespace is allowed.
pub fn parse_value(s: &str) -> Result<PyValue, ReprError> {
    let (v, used) = parse_value_prefix(s)?;
    let rest = ws(&s[used..]);
    if !rest.is_empty() {
        return Err(err_at(s, rest, "end of input"));
    }
    Ok(v)
}

/// Parse one value at the start of `s` (after whitespace) and say how many bytes it took,
/// for values embedded in a longer log line.
pub(crate) fn parse_value_prefix(s: &str) -> Result<(PyValue, usize), ReprError> {
    match value(ws(s), 0) {
        Ok((rest, v)) => Ok((v, s.len() - rest.len())),
        Err(e) => Err(to_repr_error(s, e)),
    }
}

/// Parse `a=1, b='x', ...`, the body of vLLM's config line. Text after the last pair that
/// does not continue the list (no comma, or no `name=` after it) is ignored, as is done
/// for a suffix on the line. Input that ends inside a key or value is an error.
pub fn parse_kwargs(s: &str) -> Result<Vec<(String, PyValue)>, ReprError> {
    match kwargs_core(s) {
        (out, None) => Ok(out),
        (_, Some(e)) => Err(e),
    }
}

/// The pairs of a kwargs list that was possibly cut short.
#[derive(Debug, Clone, PartialEq)]
pub struct LenientKwargs {
    /// The pairs printed in full before the cut. A value cut at the very end of a vLLM
    /// line cannot be told from a complete one (`max_seq_len=40` may have been `4096`):
    /// nothing closes that list.
    pub(crate) kwargs: Vec<(String, PyValue)>,
    pub(crate) truncated: bool,
}

/// Like [`parse_kwargs`], but a cut line yields the pairs before the cut. Errors other
/// than truncation are still errors: they mean this is not the text we think it is.
pub fn parse_kwargs_lenient(s: &str) -> Result<LenientKwargs, ReprError> {
    match kwargs_core(s) {
        (kwargs, None) => Ok(LenientKwargs {
            kwargs,
            truncated: false,
        }),
        (kwargs, Some(e)) if e.kind == ReprErrorKind::Truncated => Ok(LenientKwargs {
            kwargs,
            truncated: true,
        }),
        (_, Some(e)) => Err(e),
    }
}

/// A call such as `ServerArgs(...)` that was possibly cut short.
#[derive(Debug, Clone, PartialEq)]
pub struct LenientCall {
    pub(crate) name: String,
    /// Arguments followed by `,` or `)` before the cut; the one the cut fell in is dropped.
    pub(crate) args: Vec<PyValue>,
    pub(crate) kwargs: Vec<(String, PyValue)>,
    pub(crate) truncated: bool,
    /// Bytes of `s` taken by the call (all of `s` when truncated).
    pub(crate) consumed: usize,
}

/// Parse a call at the start of `s` (after whitespace), salvaging the arguments before a
/// cut. Text after the closing `)` is left alone.
pub fn parse_call_lenient(s: &str) -> Result<LenientCall, ReprError> {
    let start = ws(s);
    let cut_early = |name: &str| LenientCall {
        name: name.to_string(),
        args: Vec::new(),
        kwargs: Vec::new(),
        truncated: true,
        consumed: s.len(),
    };
    if start.is_empty() {
        return Ok(cut_early(""));
    }
    let (after_name, name) = dotted_name(start).map_err(|e| to_repr_error(s, e))?;
    let Some(body) = after_name.strip_prefix('(') else {
        if after_name.is_empty() || after_name == "." {
            return Ok(cut_early(name));
        }
        return Err(err_at(s, after_name, "`(`"));
    };
    let mut args = Vec::new();
    let mut kwargs = Vec::new();
    match call_body(body, 1, &mut args, &mut kwargs) {
        Ok(rest) => Ok(LenientCall {
            name: name.to_string(),
            args,
            kwargs,
            truncated: false,
            consumed: s.len() - rest.len(),
        }),
        Err(e) => {
            let e = to_repr_error(s, e);
            if e.kind != ReprErrorKind::Truncated {
                return Err(e);
            }
            Ok(LenientCall {
                name: name.to_string(),
                args,
                kwargs,
                truncated: true,
                consumed: s.len(),
            })
        }
    }
}

#[cfg(test)]
mod tests;
