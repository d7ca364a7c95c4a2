//! `rankscope schema`: the JSON Schema of a document rankscope writes.

use crate::cli::SchemaDocument;
use anyhow::{Context, Result};
use rankscope::render::json;

use super::out_json;

pub fn run(document: SchemaDocument) -> Result<u8> {
    let schema = json::schema(document.name())
        .with_context(|| format!("no schema named {}", document.name()))?;
    out_json(&json::KeyOrder(schema.as_value()))?;
    Ok(0)
}
