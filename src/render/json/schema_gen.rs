//! The JSON Schemas of the documents, generated from the output types with schemars, and
//! the order their keys are printed in.

use schemars::JsonSchema;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::{mem, DiffDoc, EventsDoc, MessageDoc, PhaseRecordDoc, SummaryDoc};

/// The string values the schema allows for an enum of the documents, in their order:
/// `enum_values::<FailureKindName>()` is `["oom", "not_enough_memory", …]`. Read from the
/// generated schema so that text about the values (the Prometheus HELP) follows it.
pub(crate) fn enum_values<T: JsonSchema>() -> Vec<String> {
    let root = generator().into_root_schema_for::<T>();
    let strings = |o: &Value| -> Vec<String> {
        o.get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let root = root.as_value();
    let mut out = strings(root);
    // Variants with doc comments come as `oneOf`, one sub-schema per value.
    for sub in root
        .get("oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.extend(strings(sub));
    }
    out
}

/// The JSON Schema of one document: `summary`, `events`, `diff`, `event` (one NDJSON
/// line of `events --ndjson`), `phase` (one line of `summary --ndjson`), `mem`, `mem-diff`.
///
/// Draft 7, as since the first published schema: schemars 1 defaults to 2020-12
/// (`$defs`), which would move every `$ref` a consumer's validator follows.
pub fn schema(name: &str) -> Option<schemars::Schema> {
    Some(match name {
        "summary" => generator().into_root_schema_for::<SummaryDoc>(),
        "events" => generator().into_root_schema_for::<EventsDoc>(),
        "diff" => generator().into_root_schema_for::<DiffDoc>(),
        "event" => generator().into_root_schema_for::<MessageDoc>(),
        "phase" => generator().into_root_schema_for::<PhaseRecordDoc>(),
        "mem" => generator().into_root_schema_for::<mem::MemDoc>(),
        "mem-diff" => generator().into_root_schema_for::<mem::MemDiffDoc>(),
        _ => return None,
    })
}

/// The generator of every schema: draft 7 with the transforms below.
fn generator() -> schemars::SchemaGenerator {
    let mut settings = schemars::generate::SchemaSettings::draft07()
        .with_transform(AlwaysPresent)
        .with_transform(OneLineParagraphs)
        // A one-value enum as `enum: [v]`, not `const: v`: both are draft 7, and the
        // published schemas have always said `enum`.
        .with_transform(schemars::transform::ReplaceConstValue::default());
    // The documents are written, never read: describe what serialising produces.
    settings.contract = schemars::generate::Contract::Serialize;
    settings.into_generator()
}

/// Every field of every output type is written, as `null` when unknown, so the schema
/// marks them all required: a consumer can tell "unknown" (null) from "this version has
/// no such field" (absent). schemars would leave `Option` fields optional. `required`
/// is kept sorted, as schemars 0.8 wrote it, so that the published text only changes
/// when a field does.
#[derive(Clone, Debug)]
struct AlwaysPresent;

impl schemars::transform::Transform for AlwaysPresent {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        let names: Option<Vec<String>> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect());
        if let Some(obj) = schema.as_object_mut() {
            let mut required: std::collections::BTreeSet<String> = obj
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            required.extend(names.into_iter().flatten());
            if !required.is_empty() {
                obj.insert("required".into(), required.into_iter().collect());
            }
        }
        schemars::transform::transform_subschemas(self, schema);
    }
}

/// A description as one line per paragraph, as schemars 0.8 wrote them: schemars 1 keeps
/// the doc comment's line breaks, which are where rustfmt wrapped the source, not part of
/// the text. Lines are trimmed and joined with a space; a blank line still parts two
/// paragraphs (`\n\n`).
#[derive(Clone, Debug)]
struct OneLineParagraphs;

impl schemars::transform::Transform for OneLineParagraphs {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        if let Some(Value::String(text)) = schema.get_mut("description") {
            *text = one_line_paragraphs(text);
        }
        schemars::transform::transform_subschemas(self, schema);
    }
}

fn one_line_paragraphs(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').map(str::trim).collect();
    lines
        .join("\n")
        .trim()
        .split("\n\n")
        .map(|p| p.trim().replace('\n', " "))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A schema printed with its keys in the order schemars 0.8 wrote them (`$schema`,
/// `title`, `description`, `type` … `properties`, `$ref`, `definitions` last), and its
/// validation numbers (`minimum`) as floats, as 0.8 did (`0.0`): schemars 1 holds a
/// schema as a `serde_json` map, which prints its keys sorted (our `serde_json` keeps no
/// insertion order, and must not, for the documents' sake). So the published schemas'
/// text only changes where what they say does. Property and definition names stay
/// sorted, as before.
pub struct KeyOrder<'a>(pub &'a Value);

/// Schema keywords in schemars 0.8's order (its `SchemaObject` fields, flattened); a
/// keyword not listed comes after them, sorted, and `definitions` last of all.
const KEYWORDS: [&str; 42] = [
    "$schema",
    "$id",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "type",
    "format",
    "enum",
    "const",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "items",
    "additionalItems",
    "maxItems",
    "minItems",
    "uniqueItems",
    "contains",
    "maxProperties",
    "minProperties",
    "required",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "$ref",
];

fn keyword_rank(k: &str) -> usize {
    match KEYWORDS.iter().position(|w| *w == k) {
        Some(i) => i,
        None if k == "definitions" || k == "$defs" => KEYWORDS.len() + 1,
        None => KEYWORDS.len(),
    }
}

impl Serialize for KeyOrder<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_by_key(|k| (keyword_rank(k), k.as_str()));
                let mut out = s.serialize_map(Some(keys.len()))?;
                for k in keys {
                    let v = &m[k.as_str()];
                    match k.as_str() {
                        "properties" | "patternProperties" | "definitions" | "$defs" => {
                            out.serialize_entry(k, &Names(v))?
                        }
                        "allOf"
                        | "anyOf"
                        | "oneOf"
                        | "not"
                        | "if"
                        | "then"
                        | "else"
                        | "items"
                        | "additionalItems"
                        | "contains"
                        | "additionalProperties"
                        | "propertyNames" => out.serialize_entry(k, &KeyOrder(v))?,
                        "multipleOf" | "maximum" | "exclusiveMaximum" | "minimum"
                        | "exclusiveMinimum" => match v.as_f64() {
                            Some(x) => out.serialize_entry(k, &x)?,
                            None => out.serialize_entry(k, v)?,
                        },
                        _ => out.serialize_entry(k, v)?,
                    }
                }
                out.end()
            }
            // A list of subschemas (`anyOf`, tuple `items`).
            Value::Array(a) => {
                let mut out = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    out.serialize_element(&KeyOrder(v))?;
                }
                out.end()
            }
            other => other.serialize(s),
        }
    }
}

/// A map from names (properties, definitions) to schemas: names sorted, each value a
/// schema.
struct Names<'a>(&'a Value);

impl Serialize for Names<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(m) => {
                let mut out = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    out.serialize_entry(k, &KeyOrder(v))?;
                }
                out.end()
            }
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_is_one_line_per_paragraph() {
        // As rustfmt wraps a doc comment: each line after the first begins a word.
        let doc = "The stamp of its last\nready line;  null\n\n  Second part\n  ends here.\n";
        assert_eq!(
            one_line_paragraphs(doc),
            "The stamp of its last ready line;  null\n\nSecond part ends here."
        );
    }

    #[test]
    fn keywords_come_in_the_old_order_and_names_stay_sorted() {
        // A property called `type` and one called `$ref` are names, not keywords.
        let schema = serde_json::json!({
            "properties": {"type": {"type": "integer", "minimum": 0}, "$ref": true},
            "required": ["$ref", "type"],
            "type": "object",
            "title": "T",
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"B": {"enum": ["x"], "description": "d"}, "A": true},
            "x-other": 1,
        });
        let text = serde_json::to_string(&KeyOrder(&schema)).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"$schema":"http://json-schema.org/draft-07/schema#","title":"T","#,
                r#""type":"object","required":["$ref","type"],"#,
                r#""properties":{"$ref":true,"type":{"type":"integer","minimum":0.0}},"#,
                r#""x-other":1,"definitions":{"A":true,"B":{"description":"d","enum":["x"]}}}"#
            )
        );
    }
}
