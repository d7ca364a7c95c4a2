//! A `server_args` sample's configuration read for `grammars check`, as a run reads it.
//! The check lives in `grammar`, below this layer, so it is handed this reader.

use crate::grammar::{ConfigReading, GrammarSet, LineMatch};

use super::{Config, ConfigError};

/// The configuration in a matched `server_args` sample, read with the rules a run uses
/// (its own grammar's first, then every other grammar's). Offsets in the answer are
/// bytes of `line`, the sample as written. A line that ends inside the configuration
/// reads when its event takes the lines after it (`traceback = true`: a `{:#?}` dump
/// continues there); otherwise it is a failure with the strict reader's words.
pub fn read_sample(set: &GrammarSet, m: &LineMatch, line: &str) -> ConfigReading {
    let grammar = set
        .grammars
        .get(m.grammar)
        .map_or("", |g| g.spec.id.as_str());
    let rules = || set.knowledge().config_rules(grammar);
    // The message is the line after its prefix, so its offsets move by where it starts.
    let start = line.find(m.message.as_str()).unwrap_or(0);
    match Config::parse_with_rule(&m.message, rules(), true) {
        Ok((parsed, _)) if !parsed.truncated || m.traceback => ConfigReading::Read {
            settings: parsed.config.entries.len(),
            continued: parsed.truncated,
        },
        Ok((_, rule)) => {
            // Read again strictly for the words: where the line ends, what was needed.
            let error = match Config::parse_with_rule(&m.message, rules(), false) {
                Err((e, _)) => e,
                // The strict and lenient readers share their grammar: not reached.
                Ok(_) => ConfigError::Shape {
                    offset: m.message.len(),
                    expected: "the rest of the configuration",
                    found: "the end of the line".into(),
                },
            };
            unreadable(rule, error, start, line, true)
        }
        Err((ConfigError::NotAConfigLine, _)) | Err((_, None)) => ConfigReading::NoMarker,
        // A dict or JSON object pretty-printed over several lines ends the line inside
        // itself, where its reader has no partial reading: the run reads the whole record,
        // so with `traceback = true` the line is fine, its settings on the lines after.
        Err((error, Some(_)))
            if m.traceback && error.offset().is_some_and(|at| at >= m.message.len()) =>
        {
            ConfigReading::Read {
                settings: 0,
                continued: true,
            }
        }
        Err((error, Some(rule))) => unreadable(rule, error, start, line, false),
    }
}

fn unreadable(
    rule: &crate::grammar::ConfigRule,
    error: ConfigError,
    start: usize,
    line: &str,
    cut: bool,
) -> ConfigReading {
    let error = error.map_offset(|at| at + start);
    ConfigReading::Unreadable {
        grammar: rule.grammar.clone(),
        marker: rule.marker.clone(),
        syntax: rule.syntax.name(),
        escaped: rule.escaped.is_some(),
        at_escaped_quote: error.at_escaped_quote(line),
        error: error.to_string(),
        cut,
    }
}
