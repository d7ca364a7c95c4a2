//! One allocation for the equal messages and fields of a run's events.
//!
//! A run's ranks print the same start-up lines: of the 13 events a rank file of
//! `mkranks.py` gives, 12 have a message and fields some other rank's event has too
//! (8,206 distinct messages among the 106,498 events of 8,192 rank files). Each event's
//! message and fields were an allocation of their own, ~180 bytes an event with the
//! allocator's headers: a third of a 65,536-rank run's memory, twice over in a `diff`.
//! Events are interned as each file's scan is appended to the run, so only a batch of
//! files' events is ever held unshared.

use std::collections::hash_map::Entry;
use std::hash::{BuildHasher, Hash, Hasher};

use crate::base::event::Event;
use crate::base::fields::{FieldName, FieldValue, Fields};
use crate::base::name::Name;

/// The messages and fields met so far, by a hash of their content. Two different
/// contents with one 64-bit hash are not shared: the later keeps its own allocation.
#[derive(Default)]
pub(crate) struct Interner {
    hasher: foldhash::fast::RandomState,
    messages: foldhash::HashMap<u64, Name>,
    fields: foldhash::HashMap<u64, Fields>,
}

impl Interner {
    /// [`Interner::intern`] of each event.
    pub(crate) fn intern_all(&mut self, events: &mut [Event]) {
        for e in events {
            self.intern(e);
        }
    }

    /// `e`'s message and fields replaced by the equal ones met before, if any; else kept
    /// as they are, for later events to share.
    pub(crate) fn intern(&mut self, e: &mut Event) {
        let h = self.hasher.hash_one(e.message.as_str());
        match self.messages.entry(h) {
            Entry::Occupied(o) if o.get().as_str() == e.message.as_str() => {
                e.message = o.get().clone();
            }
            Entry::Occupied(_) => {}
            Entry::Vacant(v) => {
                v.insert(e.message.clone());
            }
        }
        let mut state = self.hasher.build_hasher();
        hash_fields(e.fields.as_slice(), &mut state);
        match self.fields.entry(state.finish()) {
            Entry::Occupied(o) if same_fields(o.get().as_slice(), e.fields.as_slice()) => {
                e.fields = o.get().clone();
            }
            Entry::Occupied(_) => {}
            Entry::Vacant(v) => {
                v.insert(e.fields.clone());
            }
        }
    }
}

fn hash_fields(fields: &[(FieldName, FieldValue)], h: &mut impl Hasher) {
    h.write_usize(fields.len());
    for (name, value) in fields {
        name.hash(h);
        match value {
            FieldValue::Bytes { bytes, resolution } => {
                h.write_u8(0);
                h.write_i64(*bytes);
                h.write_u64(*resolution);
            }
            FieldValue::Int(i) => {
                h.write_u8(1);
                h.write_i64(*i);
            }
            FieldValue::Float(f) => {
                h.write_u8(2);
                h.write_u64(f.to_bits());
            }
            FieldValue::Text(t) => {
                h.write_u8(3);
                t.hash(h);
            }
        }
    }
}

/// The same names and values, a float by its bits: `-0.0` is not `0.0` here, and a
/// NaN is itself, so what is shared prints and compares as each event's own did.
fn same_fields(a: &[(FieldName, FieldValue)], b: &[(FieldName, FieldValue)]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((na, va), (nb, vb))| {
            na == nb
                && match (va, vb) {
                    (FieldValue::Float(x), FieldValue::Float(y)) => x.to_bits() == y.to_bits(),
                    (x, y) => x == y,
                }
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::base::event::test_event;

    fn event(message: &str, fields: &[(&str, FieldValue)]) -> Event {
        let mut e = test_event(0, 1, None);
        e.message = message.into();
        e.fields = fields.iter().cloned().collect();
        e
    }

    #[test]
    fn equal_messages_and_fields_share_one_allocation_and_others_keep_theirs() {
        let bytes = |b| FieldValue::Bytes {
            bytes: b,
            resolution: 10 << 20,
        };
        let mut pool = Interner::default();
        let mut first = event("Load weight end. mem usage=15.52 GB", &[("mem", bytes(7))]);
        let mut same = event("Load weight end. mem usage=15.52 GB", &[("mem", bytes(7))]);
        let mut other = event("Load weight end. mem usage=15.53 GB", &[("mem", bytes(8))]);
        for e in [&mut first, &mut same, &mut other] {
            pool.intern(e);
        }
        assert!(first.message.ptr_eq(&same.message));
        assert!(first.fields.ptr_eq(&same.fields));
        assert!(!first.message.ptr_eq(&other.message));
        assert!(!first.fields.ptr_eq(&other.fields));
        assert_eq!(&*other.message, "Load weight end. mem usage=15.53 GB");
        assert_eq!(other.fields.get("mem"), Some(&bytes(8)));
    }

    #[test]
    fn fields_equal_only_as_numbers_are_not_shared() {
        // 0.0 == -0.0 as floats, but each prints its own sign; a resolution is part of
        // a figure (10 MiB and 1 MiB steps make different noise thresholds).
        let mut pool = Interner::default();
        let mut plus = event("t", &[("s", FieldValue::Float(0.0))]);
        let mut minus = event("t", &[("s", FieldValue::Float(-0.0))]);
        let mut coarse = event(
            "t",
            &[(
                "b",
                FieldValue::Bytes {
                    bytes: 1,
                    resolution: 10,
                },
            )],
        );
        let mut fine = event(
            "t",
            &[(
                "b",
                FieldValue::Bytes {
                    bytes: 1,
                    resolution: 1,
                },
            )],
        );
        for e in [&mut plus, &mut minus, &mut coarse, &mut fine] {
            pool.intern(e);
        }
        assert!(!plus.fields.ptr_eq(&minus.fields));
        assert_eq!(minus.fields.get("s"), Some(&FieldValue::Float(-0.0)));
        assert!(
            matches!(minus.fields.get("s"), Some(FieldValue::Float(f)) if f.is_sign_negative())
        );
        assert!(!coarse.fields.ptr_eq(&fine.fields));
        // The message is the same text each time: one allocation for the four.
        assert!(plus.message.ptr_eq(&fine.message));
    }
}
