//! The values a grammar captured on one line, by capture name.
//!
//! A run keeps up to 131,072 events, each with one to a dozen fields. A `BTreeMap` per
//! event cost ~545 bytes of heap for two or three fields (a whole leaf node each): at
//! 100,000 ranks that was 155 MiB, the largest part of the peak (heaptrack). [`Fields`] is
//! one allocation of exactly the fields captured, sorted by name, and the names are the
//! grammar's own `Arc<str>`s, shared by every event of a kind rather than copied into each.

use std::sync::Arc;

/// A value a grammar captured, already in canonical units.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// Memory in bytes. `resolution` is the size of one step of the printed figure
    /// (`0.60 GB` is 0.01 GiB = 10.24 MiB), so analysis can tell noise from signal.
    Bytes {
        /// The amount, in bytes.
        bytes: i64,
        /// The size in bytes of one step of the printed figure (its last digit).
        resolution: u64,
    },
    /// A whole number (a count, tokens, a grammar's unit).
    Int(i64),
    /// A number with a fraction (seconds, a ratio).
    Float(f64),
    /// Text as captured (a name, a dtype).
    Text(String),
}

impl FieldValue {
    /// The bytes of a memory value; `None` for any other value.
    pub fn as_bytes(&self) -> Option<i64> {
        match self {
            FieldValue::Bytes { bytes, .. } => Some(*bytes),
            _ => None,
        }
    }
    /// One print step of a memory value, in bytes; 0 for any other value.
    pub fn resolution(&self) -> u64 {
        match self {
            FieldValue::Bytes { resolution, .. } => *resolution,
            _ => 0,
        }
    }
    /// The value as a number (bytes for memory); `None` for text.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            FieldValue::Bytes { bytes, .. } => Some(*bytes as f64),
            FieldValue::Int(i) => Some(*i as f64),
            FieldValue::Float(f) => Some(*f),
            FieldValue::Text(_) => None,
        }
    }
    /// The value as a whole number (bytes for memory); `None` for a fraction or text.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            FieldValue::Bytes { bytes, .. } => Some(*bytes),
            FieldValue::Int(i) => Some(*i),
            _ => None,
        }
    }
    /// A rank number: an integer, or a text capture of digits (a rank rule's capture
    /// with no `int` unit: a rank is always a whole number, so its unit cannot matter).
    pub(crate) fn as_rank_number(&self) -> Option<u32> {
        match self {
            FieldValue::Text(s) => s.trim().parse().ok(),
            v => u32::try_from(v.as_i64()?).ok(),
        }
    }
    /// The text of a text value; `None` for a number.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            FieldValue::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// A capture's name, shared between the grammar that declares it and every event that
/// carries it.
pub(crate) type FieldName = Arc<str>;

/// An event's fields: name → value, at most one value per name, iterated in name order
/// (as the map it replaces was, so every output that lists fields keeps its order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fields(Vec<(FieldName, FieldValue)>);

impl Fields {
    /// Room for `n` fields in the one allocation (a line's captures are counted first).
    pub(crate) fn with_capacity(n: usize) -> Fields {
        Fields(Vec::with_capacity(n))
    }
    /// A copy with room for `extra` more fields (a grammar's constants, before a line's
    /// captures are added).
    pub(crate) fn clone_with_room(&self, extra: usize) -> Fields {
        let mut v = Vec::with_capacity(self.0.len() + extra);
        v.extend(self.0.iter().cloned());
        Fields(v)
    }
    /// Gives back room no field took (an event keeps its fields for the whole run).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.0.shrink_to_fit();
    }
    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| (**k).cmp(name))
    }
    /// The value of `name`, if the event has one.
    pub fn get(&self, name: &str) -> Option<&FieldValue> {
        self.position(name).ok().map(|i| &self.0[i].1)
    }
    pub(crate) fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_ok()
    }
    /// Sets `name` to `value`; a value already there is replaced and returned (a capture
    /// wins over the grammar's constant of the same name, as `grammars check` warns).
    pub(crate) fn insert(&mut self, name: FieldName, value: FieldValue) -> Option<FieldValue> {
        match self.position(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (name, value));
                None
            }
        }
    }
    /// Takes `name` out, if the event has it.
    pub(crate) fn remove(&mut self, name: &str) -> Option<FieldValue> {
        self.position(name).ok().map(|i| self.0.remove(i).1)
    }
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
    /// (name, value) in name order.
    pub(crate) fn iter(&self) -> FieldsIter<'_> {
        self.0.iter().map(|(k, v)| (&**k, v))
    }
}

/// The iterator of [`Fields::iter`].
pub(crate) type FieldsIter<'a> = std::iter::Map<
    std::slice::Iter<'a, (FieldName, FieldValue)>,
    fn(&'a (FieldName, FieldValue)) -> (&'a str, &'a FieldValue),
>;

impl<'a> IntoIterator for &'a Fields {
    type Item = (&'a str, &'a FieldValue);
    type IntoIter = FieldsIter<'a>;
    fn into_iter(self) -> FieldsIter<'a> {
        self.iter()
    }
}

impl<N: Into<FieldName>> FromIterator<(N, FieldValue)> for Fields {
    fn from_iter<I: IntoIterator<Item = (N, FieldValue)>>(iter: I) -> Fields {
        let iter = iter.into_iter();
        let mut fields = Fields::with_capacity(iter.size_hint().0);
        for (name, value) in iter {
            fields.insert(name.into(), value);
        }
        fields
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn iterates_in_name_order_and_a_later_value_replaces_an_earlier() {
        let mut f: Fields = [
            ("rank", FieldValue::Int(3)),
            ("backend", FieldValue::Text("nccl".into())),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            f.insert("rank".into(), FieldValue::Int(4)),
            Some(FieldValue::Int(3))
        );
        f.insert("mem_bytes".into(), FieldValue::Int(7));
        let names: Vec<&str> = f.iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["backend", "mem_bytes", "rank"]);
        assert_eq!(f.get("rank").and_then(FieldValue::as_i64), Some(4));
        assert!(f.contains_key("backend") && !f.contains_key("ran"));
        assert_eq!(f.len(), 3);
    }
}
