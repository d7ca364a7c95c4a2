//! Texts that many events share: an event's kind, its grammar's id and its message.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A shared, immutable name (`dist_init_end`, `sglang`). A run holds one kind and one
/// grammar per event, drawn from a few dozen names: each was a `String` of its own, two
/// allocations and ~64 bytes of heap per event (on 8,192 rank files, 213,000 allocations
/// made on the scanning threads and freed at exit). A clone is a reference count.
/// Compares, hashes and orders as the text it holds, so maps keyed by it are looked up
/// with a `&str`. A thin pointer (8 bytes, where an `Arc<str>` is 16), as every event
/// holds three (its kind, its grammar, and its message: the same message of a run's
/// ranks is shared too, `base::interned`); reading the text is one step more.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(Arc<Box<str>>);

impl Name {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// Both are the one allocation.
    #[cfg(test)]
    pub(crate) fn ptr_eq(&self, other: &Name) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name(Arc::new(s.into()))
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name(Arc::new(s.into_boxed_str()))
    }
}

impl From<Name> for String {
    fn from(n: Name) -> String {
        n.0.to_string()
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn a_name_is_its_text_for_comparing_hashing_and_printing() {
        let n = Name::from("oom");
        assert_eq!(n, "oom");
        assert_eq!("oom", n);
        assert_ne!(n, "ooms");
        assert_eq!(n.clone(), Name::from(String::from("oom")));
        let mut by_kind: HashMap<Name, u32> = HashMap::new();
        by_kind.insert(n.clone(), 7);
        assert_eq!(by_kind.get("oom"), Some(&7));
        assert_eq!(format!("{n} {n:?}"), "oom \"oom\"");
        let mut names = vec![Name::from("b"), Name::from("a")];
        names.sort();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(serde_json::to_string(&n).ok().as_deref(), Some("\"oom\""));
    }
}
