//! The values a grammar captured on one line, by capture name.
//!
//! A run keeps up to 131,072 events, each with one to a dozen fields. A `BTreeMap` per
//! event cost ~545 bytes of heap for two or three fields (a whole leaf node each): at
//! 100,000 ranks that was 155 MiB, the largest part of the peak (heaptrack). [`Fields`] is
//! one allocation of exactly the fields captured, sorted by name (a boxed slice: a
//! vector's capacity was 8 bytes more in every event), and the names are the grammar's
//! own `Arc<str>`s, shared by every event of a kind rather than copied into each. A line's
//! fields are gathered in a [`FieldsBuilder`].

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
    /// Text as captured (a name, a dtype). Boxed: a `String`'s capacity made every value,
    /// and every figure, 8 bytes larger.
    Text(Box<str>),
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
/// Shared: the events of a run's ranks that printed the same line carry one allocation
/// of their fields (`base::interned`, as the run's files are read); a thin pointer, 8
/// bytes in every event where an `Arc<[…]>` is 16.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fields(Arc<Box<[(FieldName, FieldValue)]>>);

/// Where `name` is among fields sorted by name, or where it would go.
fn position(fields: &[(FieldName, FieldValue)], name: &str) -> Result<usize, usize> {
    fields.binary_search_by(|(k, _)| (**k).cmp(name))
}

/// A line's fields as they are captured, made into [`Fields`] once all are in.
#[derive(Debug, Default)]
pub(crate) struct FieldsBuilder(Vec<(FieldName, FieldValue)>);

impl FieldsBuilder {
    /// Sets `name` to `value`; a value already there is replaced and returned (a capture
    /// wins over the grammar's constant of the same name, as `grammars check` warns).
    pub(crate) fn insert(&mut self, name: FieldName, value: FieldValue) -> Option<FieldValue> {
        match position(&self.0, &name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (name, value));
                None
            }
        }
    }
    /// The fields, in one allocation of their size (room no capture took given back).
    pub(crate) fn build(self) -> Fields {
        Fields(Arc::new(self.0.into_boxed_slice()))
    }
}

impl Fields {
    /// A builder holding these fields, with room for `extra` more (a grammar's constants,
    /// before a line's captures are added: a line's captures are counted first).
    pub(crate) fn builder_with_room(&self, extra: usize) -> FieldsBuilder {
        let mut v = Vec::with_capacity(self.0.len() + extra);
        v.extend(self.0.iter().cloned());
        FieldsBuilder(v)
    }
    fn position(&self, name: &str) -> Result<usize, usize> {
        position(&self.0, name)
    }
    /// The value of `name`, if the event has one.
    pub fn get(&self, name: &str) -> Option<&FieldValue> {
        self.position(name).ok().map(|i| &self.0[i].1)
    }
    pub(crate) fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_ok()
    }
    /// Takes `name` out, if the event has it (a failure's fields copied to another
    /// rank's: rare, so the fields are made again).
    pub(crate) fn remove(&mut self, name: &str) -> Option<FieldValue> {
        let i = self.position(name).ok()?;
        let mut v = self.0.to_vec();
        let (_, value) = v.remove(i);
        self.0 = Arc::new(v.into_boxed_slice());
        Some(value)
    }
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
    /// The (name, value) pairs, in name order.
    pub(crate) fn as_slice(&self) -> &[(FieldName, FieldValue)] {
        &self.0
    }
    /// Both are the one allocation.
    #[cfg(test)]
    pub(crate) fn ptr_eq(&self, other: &Fields) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
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
        let mut fields = FieldsBuilder(Vec::with_capacity(iter.size_hint().0));
        for (name, value) in iter {
            fields.insert(name.into(), value);
        }
        fields.build()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn iterates_in_name_order_and_a_later_value_replaces_an_earlier() {
        let constants: Fields = [
            ("rank", FieldValue::Int(3)),
            ("backend", FieldValue::Text("nccl".into())),
        ]
        .into_iter()
        .collect();
        let mut b = constants.builder_with_room(2);
        assert_eq!(
            b.insert("rank".into(), FieldValue::Int(4)),
            Some(FieldValue::Int(3))
        );
        b.insert("mem_bytes".into(), FieldValue::Int(7));
        let mut f = b.build();
        let names: Vec<&str> = f.iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["backend", "mem_bytes", "rank"]);
        assert_eq!(f.get("rank").and_then(FieldValue::as_i64), Some(4));
        assert!(f.contains_key("backend") && !f.contains_key("ran"));
        assert_eq!(f.len(), 3);
        assert_eq!(f.remove("mem_bytes"), Some(FieldValue::Int(7)));
        assert_eq!(
            f.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            ["backend", "rank"]
        );
        assert_eq!(f.remove("mem_bytes"), None);
    }
}
