//! A `tags` capture's reading, remembered per thread.

use crate::base::event::Rank;

use super::read_tags_capture;

/// A `tags` capture read as [`read_tags_capture`] reads it: from the memo below when the
/// text is one of the last this thread read.
pub(crate) fn parse_tags_capture(text: &str) -> Option<Rank> {
    if text.len() > TAGS_MEMO_TEXT_MAX {
        return read_tags_capture(text);
    }
    let known = TAGS_MEMO.with(|m| m.try_borrow_mut().ok()?.find(text));
    if let Some(rank) = known {
        return rank;
    }
    let rank = read_tags_capture(text);
    TAGS_MEMO.with(|m| {
        if let Ok(mut m) = m.try_borrow_mut() {
            m.keep(text, rank.clone());
        }
    });
    rank
}

/// The longest `tags` text [`TAGS_MEMO`] keeps (`DP1 PP0 TP3 EP12` is 16 bytes).
const TAGS_MEMO_TEXT_MAX: usize = 32;
/// How many texts [`TAGS_MEMO`] keeps: a node's ranks, whose events interleave in its log.
const TAGS_MEMO_ENTRIES: usize = 16;

/// The `tags` texts read last on this thread and the ranks they gave. A process's every
/// line prints the same tags (`TP3`), and reading them (the words split, the tag names
/// looked up, sorted, an `Arc` built) was a thousand instructions an event line, a fifth
/// of reading one from the event memo; the memo's answer is a comparison of a few bytes
/// and the `Arc`'s count raised. The reading is a function of the text alone.
#[derive(Default)]
struct TagsMemo {
    entries: Vec<(Box<str>, Option<Rank>)>,
    /// The entry the next new text replaces once the memo is full.
    next: usize,
    /// The entry found or kept last.
    last: usize,
}

impl TagsMemo {
    /// The rank `text` gave, if kept: the entry found last is tried first (a rank file's
    /// every line), then the others.
    fn find(&mut self, text: &str) -> Option<Option<Rank>> {
        let same = |(t, _): &(Box<str>, Option<Rank>)| **t == *text;
        if let Some(e) = self.entries.get(self.last).filter(|e| same(e)) {
            return Some(e.1.clone());
        }
        let at = self.entries.iter().position(same)?;
        self.last = at;
        self.entries.get(at).map(|e| e.1.clone())
    }

    fn keep(&mut self, text: &str, rank: Option<Rank>) {
        if self.entries.len() < TAGS_MEMO_ENTRIES {
            self.last = self.entries.len();
            self.entries.push((text.into(), rank));
        } else if let Some(e) = self.entries.get_mut(self.next) {
            *e = (text.into(), rank);
            self.last = self.next;
            self.next = (self.next + 1) % TAGS_MEMO_ENTRIES;
        }
    }
}

thread_local! {
    static TAGS_MEMO: std::cell::RefCell<TagsMemo> = std::cell::RefCell::default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_read_through_the_memo_read_as_without_it() {
        // More texts than the memo keeps, in every spelling it reads and some it refuses,
        // three times over in an order that revisits some while others were pushed out.
        let texts: Vec<String> = (0..20)
            .map(|i| match i % 4 {
                0 => format!("TP{i}"),
                1 => format!("DP1 TP{i}"),
                2 => format!("dp=1 tp={i}"),
                _ => format!("rank={i}"),
            })
            .chain(["", "TP", &"x".repeat(40)].map(String::from))
            .collect();
        for round in 0..3 {
            for k in 0..texts.len() {
                let t = &texts[(k * (round + 1) * 7) % texts.len()];
                assert_eq!(parse_tags_capture(t), read_tags_capture(t), "{t:?}");
            }
        }
        // By hand: `DP1 TP5` is two tags, `rank=3` none.
        assert_eq!(
            parse_tags_capture("DP1 TP5").map(|r| r.to_string()),
            Some("DP1 TP5".into())
        );
        assert_eq!(parse_tags_capture("rank=3"), None);
    }
}
