//! Does a line hold a noise literal: the test every record that gave no event is asked.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};

use super::GrammarError;

/// Does a text hold any of a set of literals (the `[[noise]]` markers)? Asked of every
/// record that gave no event — most of a server's traffic — so it must not walk an
/// automaton over each byte: Teddy (aho-corasick's packed searcher) takes the literals of
/// three bytes or more, and `memmem` each shorter one. Teddy fingerprints every pattern by
/// as many leading bytes as the shortest has, so one two-byte literal (tqdm's `%|`) among
/// the rest made it stop on most positions of a traffic line: with it apart, the test
/// took a fifth of the time of the automaton on the shared benchmark log. Teddy takes at
/// most 64 literals: more are split into searchers of 64 (one automaton for the built-in
/// grammars' 65, a DFA, cost 6.8 M instructions of the start-up and more a line).
pub(super) struct AnyLiteral {
    /// Searchers of at most `PACKED_MAX` literals each, in the literals' order: those that
    /// hold no other literal first.
    packed: Vec<aho_corasick::packed::Searcher>,
    /// `implied[k]`: every literal of searcher `k` holds one of an earlier searcher's, so
    /// a text in which those found none is not searched by it (a line without noise, the
    /// common miss, costs one search: the built-in grammars' access-line literals
    /// `INFO:     1`… all hold uvicorn's `INFO:     `).
    implied: Vec<bool>,
    /// Where no packed searcher can be built (no SIMD on this CPU).
    automaton: Option<AhoCorasick>,
    short: Vec<memchr::memmem::Finder<'static>>,
    /// The literals of `packed` (or `automaton`) then of `short`: a hit's index names one.
    literals: Vec<Box<[u8]>>,
    /// `traffic[i]`: literal `i` is a traffic literal (`spec::NoiseSpec::traffic`).
    traffic: Vec<bool>,
}

/// The literal a line held, by its index in [`AnyLiteral`]'s list, and where it started.
pub(crate) type LiteralHit = Option<(usize, usize)>;

/// The literals the last lines held, the most recent first: a server's traffic is a few
/// line shapes over and over (SGLang's `Decode batch. …` and `Prefill batch. …` behind a
/// prefix of one width, vLLM's throughput line among uvicorn's access lines), so the next
/// line most often holds one of them at the same place, which a comparison of its bytes
/// shows without a search. Four, not one: with one, each change of shape was a search
/// (3 % of the instructions of scanning the shared benchmark log, a quarter of the vLLM
/// one's); with two, a third of the vLLM log's lines still were; with three or more,
/// nearly none.
pub(crate) type LiteralMemo = [LiteralHit; 4];

/// Literals shorter than this are looked for one by one with `memmem`.
const PACKED_MIN: usize = 3;

/// The most literals one packed searcher (Teddy) takes.
const PACKED_MAX: usize = 64;

impl AnyLiteral {
    /// `traffic`: those of `literals` that mark traffic.
    pub(super) fn new(literals: &[String], traffic: &[String]) -> Result<AnyLiteral, GrammarError> {
        let (mut long, short): (Vec<&String>, Vec<&String>) = literals
            .iter()
            .filter(|l| !l.is_empty())
            .partition(|l| l.len() >= PACKED_MIN);
        // The literals that hold another go last (a stable sort keeps the rest in order),
        // asked only where they would not all fit one searcher. One searcher per literal,
        // each asked of the longer ones: `str::contains` per pair, which sets up a
        // searcher each time, was 3.2 M instructions of the start-up.
        let finders: Vec<(&str, memchr::memmem::Finder)> = (literals.iter())
            .filter(|o| !o.is_empty() && long.len() > PACKED_MAX)
            .map(|o| (o.as_str(), memchr::memmem::Finder::new(o.as_bytes())))
            .collect();
        // Whether `l` holds one of the literals `among` accepts.
        let holds = |l: &str, among: &dyn Fn(&str) -> bool| {
            (finders.iter())
                .any(|(o, f)| o.len() < l.len() && among(o) && f.find(l.as_bytes()).is_some())
        };
        long.sort_by_cached_key(|l| holds(l, &|_| true));
        let chunks: Vec<&[&String]> = long.chunks(PACKED_MAX).collect();
        let mut config = aho_corasick::packed::Config::new();
        config.match_kind(aho_corasick::packed::MatchKind::LeftmostLongest);
        let packed: Option<Vec<_>> = (chunks.iter())
            .map(|chunk| config.builder().extend(chunk.iter()).build())
            .collect();
        let implied = (chunks.iter().enumerate())
            .map(|(k, chunk)| {
                let earlier = &long[..k * PACKED_MAX];
                let in_earlier = |o: &str| earlier.iter().any(|e| e.as_str() == o);
                k > 0 && chunk.iter().all(|l| holds(l, &in_earlier))
            })
            .collect();
        let (packed, automaton) = match packed {
            Some(packed) => (packed, None),
            None => {
                let ac = AhoCorasickBuilder::new()
                    .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                    .build(&long)
                    .map_err(|e| GrammarError::Matcher(e.to_string()))?;
                (Vec::new(), Some(ac))
            }
        };
        let literals: Vec<Box<[u8]>> = (long.iter().chain(&short))
            .map(|l| l.as_bytes().into())
            .collect();
        let traffic = (literals.iter())
            .map(|l| traffic.iter().any(|t| t.as_bytes() == &**l))
            .collect();
        let short = short
            .iter()
            .map(|l| memchr::memmem::Finder::new(l.as_bytes()).into_owned())
            .collect();
        Ok(AnyLiteral {
            packed,
            implied,
            automaton,
            short,
            literals,
            traffic,
        })
    }

    /// Whether `text` holds one of the literals. `memo` holds where earlier texts held one
    /// (kept by the caller from text to text): if this one holds either at the same
    /// place, it is not searched; else the hit found, if any, goes first in `memo`.
    pub(super) fn is_match(&self, text: &[u8], memo: &mut LiteralMemo) -> bool {
        // Compared in place (`begins_with`), not by a call to `memcmp`.
        let holds = |hit: LiteralHit| {
            let Some((i, at)) = hit else { return false };
            let (Some(lit), Some(rest)) = (self.literals.get(i), text.get(at..)) else {
                return false;
            };
            crate::base::text::begins_with(rest, lit)
        };
        // The entry that holds goes first, the ones before it one place down (a shift of
        // a few words, not a slice rotation); a new hit pushes the oldest out.
        let (hit, from) = match memo.iter().position(|&hit| holds(hit)) {
            // Most lines hold what the line before held: nothing moves.
            Some(0) => return true,
            Some(k) => (memo[k], k),
            None => match self.find(text) {
                Some(hit) => (Some(hit), memo.len() - 1),
                None => return false,
            },
        };
        for j in (1..=from).rev() {
            memo[j] = memo[j - 1];
        }
        memo[0] = hit;
        true
    }

    /// Whether putting a digit for another anywhere in a text can never change
    /// [`AnyLiteral::is_match`]'s answer: each literal that holds digits comes with every
    /// twin that holds other digits in their places (uvicorn's `INFO:     0` … `INFO:     9`).
    /// Then a text holds a literal at some place exactly when its digit-for-digit twin
    /// holds that literal's twin there. What lets one bare line's answers stand for the
    /// next that differs from it only in digits (`scan::shape::BareShapes`). A literal
    /// with more than `MAX_DIGITS` digits, whose twins are too many to ask for, makes the
    /// answer no.
    pub(super) fn blind_to_digits(&self) -> bool {
        const MAX_DIGITS: u32 = 3;
        let held: std::collections::HashSet<&[u8]> = self.literals.iter().map(|l| &**l).collect();
        self.literals.iter().all(|lit| {
            let places: Vec<usize> = (0..lit.len())
                .filter(|&i| lit[i].is_ascii_digit())
                .collect();
            let Ok(k) = u32::try_from(places.len()) else {
                return false;
            };
            if k > MAX_DIGITS {
                return false;
            }
            // Twin `n` holds the decimal digits of `n` in `places`, the last place last.
            (0..10u32.pow(k)).all(|n| {
                let mut twin = lit.to_vec();
                let mut rest = n;
                for &i in places.iter().rev() {
                    twin[i] = b'0' + (rest % 10) as u8;
                    rest /= 10;
                }
                held.contains(twin.as_slice())
            })
        })
    }

    /// Whether the hit `hit` found a traffic literal.
    pub(super) fn is_traffic(&self, hit: LiteralHit) -> bool {
        hit.is_some_and(|(i, _)| self.traffic.get(i) == Some(&true))
    }

    /// The literal the hit `hit` found.
    #[cfg(test)]
    fn literal(&self, hit: LiteralHit) -> Option<&[u8]> {
        self.literals.get(hit?.0).map(|l| &**l)
    }

    /// Where the hit `hit` lies in the text it was found in: its start and end.
    pub(super) fn span_of(&self, hit: LiteralHit) -> Option<(usize, usize)> {
        let (i, at) = hit?;
        Some((at, at + self.literals.get(i)?.len()))
    }

    /// The first literal found in `text` (by index) and where it starts: of the literals
    /// of three bytes or more, the leftmost, the longest of those starting there (an
    /// access line's `INFO:     1`, a traffic literal, over uvicorn's `INFO:     `).
    fn find(&self, text: &[u8]) -> LiteralHit {
        let mut found: Option<(usize, usize, usize)> = None;
        for (k, p) in self.packed.iter().enumerate() {
            if found.is_none() && self.implied.get(k) == Some(&true) {
                continue;
            }
            if let Some(m) = p.find(text) {
                let (at, len) = (m.start(), m.len());
                if found.is_none_or(|(_, a, l)| at < a || (at == a && len > l)) {
                    found = Some((k * PACKED_MAX + m.pattern().as_usize(), at, len));
                }
            }
        }
        let mut long = found.map(|(i, at, _)| (i, at));
        if let Some(a) = &self.automaton {
            long = a.find(text).map(|m| (m.pattern().as_usize(), m.start()));
        }
        if long.is_some() {
            return long;
        }
        let first_short = self.literals.len() - self.short.len();
        (self.short.iter().enumerate())
            .find_map(|(k, f)| f.find(text).map(|at| (first_short + k, at)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_noise_literals_than_a_packed_searcher_takes_are_each_found_leftmost() {
        // 150 made-up literals (searchers of 64, 64 and 22) and tqdm's `%|`: each is found
        // in a line of its own, and where two are held, the one that starts first.
        let literals: Vec<String> = (0..150)
            .map(|i| format!("noise-{i:03}-marker"))
            .chain(["%|".to_string()])
            .collect();
        let any = AnyLiteral::new(&literals, &[]).expect("literals build");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("ssse3") {
            assert_eq!(any.packed.len(), 3);
        }
        for (i, lit) in literals.iter().enumerate() {
            // By hand: the literal starts after the 26-byte prefix and `before `, at 33.
            let line = format!("[2026-12-06 09:00:00 TP0] before {lit} after");
            let hit = any.find(line.as_bytes());
            assert_eq!(hit, Some((i, 33)), "{lit}");
            assert_eq!(any.span_of(hit), Some((33, 33 + lit.len())));
        }
        // The third searcher's literal first in the line, the first searcher's after it.
        assert_eq!(
            any.find(b"x noise-149-marker y noise-000-marker"),
            Some((149, 2))
        );
        assert!(!any.is_match(b"noise-150-marker", &mut [None; 4]));
    }

    #[test]
    fn of_two_noise_literals_starting_at_one_place_the_longer_is_found() {
        // 63 literals, an access line's `INFO:     1` and uvicorn's `INFO:     `, which
        // it holds: the holder is listed last, in a searcher of its own that is asked
        // only after an earlier one found something.
        let mut literals: Vec<String> = (0..63).map(|i| format!("noise-{i:03}-marker")).collect();
        literals.push("INFO:     1".to_string());
        literals.push("INFO:     ".to_string());
        let any = AnyLiteral::new(&literals, &[]).expect("literals build");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("ssse3") {
            assert_eq!(
                (any.packed.len(), any.implied.as_slice()),
                (2, &[false, true][..])
            );
        }
        let access = b"[2026-12-06 09:00:00] INFO:     10.0.0.1:5 - \"GET / HTTP/1.1\" 200";
        let hit = any.find(access);
        assert_eq!(any.literal(hit), Some(&b"INFO:     1"[..]));
        // By hand: the 22-byte prefix, then the 11 bytes of the literal.
        assert_eq!(any.span_of(hit), Some((22, 33)));
        let own = b"[2026-12-06 09:00:00] INFO:     Started server process [7]";
        assert_eq!(any.literal(any.find(own)), Some(&b"INFO:     "[..]));
        assert_eq!(any.find(b"[2026-12-06 09:00:00] Started"), None);
    }

    #[test]
    fn a_hit_says_whether_its_literal_marks_traffic() {
        let literals = ["Decode batch".to_string(), " NCCL INFO ".to_string()];
        let any = AnyLiteral::new(&literals, &literals[..1]).expect("literals build");
        let traffic = any.find(b"[2026-12-06 09:00:00 TP0] Decode batch. #running-req: 1");
        assert!(traffic.is_some() && any.is_traffic(traffic));
        let other = any.find(b"vm:11:11 [0] NCCL INFO Channel 00/02");
        assert!(other.is_some() && !any.is_traffic(other));
        assert!(!any.is_traffic(None));
    }

    #[test]
    fn literals_are_blind_to_digits_only_with_every_digit_twin_of_each() {
        let blind = |lits: &[&str]| {
            let lits: Vec<String> = lits.iter().map(|l| l.to_string()).collect();
            AnyLiteral::new(&lits, &[])
                .expect("builds")
                .blind_to_digits()
        };
        let access: Vec<String> = (0..10).map(|d| format!("INFO:     {d}")).collect();
        let mut lits: Vec<&str> = access.iter().map(String::as_str).collect();
        lits.extend(["it/s]", "%|", " NCCL INFO "]);
        assert!(blind(&lits));
        // Nine of the ten: a line with `INFO:     7` holds none, its twin with `1` holds one.
        assert!(!blind(&[&lits[..7], &lits[8..]].concat()));
        assert!(!blind(&["[gpu0]", "it/s]"]));
        // Two digits: all hundred twins, then one missing.
        let two: Vec<String> = (0..100).map(|n| format!("rank {n:02} up")).collect();
        let mut lits: Vec<&str> = two.iter().map(String::as_str).collect();
        assert!(blind(&lits));
        lits.remove(42);
        assert!(!blind(&lits));
        assert!(blind(&[]));
        // The built-in grammars' noise literals are: the bare-line shapes rest on it.
        let gs = crate::grammar::GrammarSet::builtin().expect("built-in grammars");
        assert!(gs.noise.blind_to_digits());
    }

    #[test]
    fn any_literal_finds_short_and_long_literals_anywhere() {
        let lits: Vec<String> = ["%|", " NCCL INFO ", "it/s]", "Gloo", "x"]
            .map(String::from)
            .to_vec();
        let any = AnyLiteral::new(&lits, &[]).expect("builds");
        assert!(any.is_match(b"Loading: 40%|####      | 4/10", &mut [None; 4]));
        assert!(any.is_match(b"host:1:2 [0] NCCL INFO Channel 00/0", &mut [None; 4]));
        assert!(any.is_match(b"12.5it/s]", &mut [None; 4]));
        assert!(any.is_match(b"[Gloo] Rank 0", &mut [None; 4]));
        // A one-byte literal, at the very end of a text shorter than Teddy's minimum.
        assert!(any.is_match(b"ax", &mut [None; 4]));
        assert!(!any.is_match(
            b"[2026-11-29 09:18:32 TP0] Decode batch. #running-req: 1",
            &mut [None; 4]
        ));
        assert!(!any.is_match(b"", &mut [None; 4]));
        // No literal at all: nothing matches.
        assert!(!AnyLiteral::new(&[], &[])
            .expect("builds")
            .is_match(b"%| NCCL INFO ", &mut [None; 4]));
    }
}

#[cfg(test)]
mod memo_tests {
    use super::*;
    use crate::grammar::{GrammarSet, LineMemo};

    #[test]
    fn a_hit_at_the_same_place_is_taken_without_a_search_and_a_new_one_goes_first() {
        let lits = ["it/s]", "Gloo", "%|"].map(String::from);
        let set = AnyLiteral::new(&lits, &[]).unwrap();
        let mut memo = [None; 4];
        // By hand: "[x] " is 4 bytes, so `it/s]` (literal 0) starts at 4.
        assert!(set.is_match(b"[x] it/s] one", &mut memo));
        assert_eq!(memo, [Some((0, 4)), None, None, None]);
        // No literal: false, and what the last hits were is kept for the next line.
        assert!(!set.is_match(b"[x] Decode batch", &mut memo));
        assert_eq!(memo, [Some((0, 4)), None, None, None]);
        // Shorter than where the last hit ended, or the literal elsewhere: searched, and
        // the new hit goes first, the ones before after it.
        assert!(!set.is_match(b"[x]", &mut memo));
        assert!(set.is_match(b"it/s] at 0", &mut memo));
        assert_eq!(memo, [Some((0, 0)), Some((0, 4)), None, None]);
        // The line shape before the last: taken from the second entry, which goes first,
        // not searched (a search would have named `Gloo` at 0, the leftmost literal).
        assert!(set.is_match(b"Glooit/s] two", &mut memo));
        assert_eq!(memo, [Some((0, 4)), Some((0, 0)), None, None]);
        // The two-byte literal is looked for apart (memmem) and numbered after the rest.
        assert!(set.is_match(b"  5%|###", &mut memo));
        assert_eq!(memo, [Some((2, 3)), Some((0, 4)), Some((0, 0)), None]);
        assert!(set.is_match(b"Gloo", &mut memo));
        assert_eq!(
            memo,
            [Some((1, 0)), Some((2, 3)), Some((0, 4)), Some((0, 0))]
        );
        // The oldest is let go for a fifth shape, and the third moves to the front.
        assert!(set.is_match(b"   it/s]", &mut memo));
        assert_eq!(
            memo,
            [Some((0, 3)), Some((1, 0)), Some((2, 3)), Some((0, 4))]
        );
        assert!(set.is_match(b"  5%| 3", &mut memo));
        assert_eq!(
            memo,
            [Some((2, 3)), Some((0, 3)), Some((1, 0)), Some((0, 4))]
        );
    }

    /// Every line of the bundled samples (start-ups of each server family, traffic,
    /// tracebacks, NCCL and nvidia-smi output) reads the same with the memo carried from
    /// line to line as with a fresh search of each.
    #[test]
    fn the_memo_answers_as_a_fresh_search_on_every_sample_line() {
        let gs = GrammarSet::builtin().unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        let (mut lines, mut noise, mut records) = (0, 0, 0);
        let mut carried = LineMemo::default();
        let mut dirs: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().collect();
        dirs.sort_by_key(|d| d.path());
        for dir in dirs {
            let Ok(files) = std::fs::read_dir(dir.path()) else {
                continue;
            };
            for file in files.flatten() {
                let Ok(text) = std::fs::read(file.path()) else {
                    continue;
                };
                for line in text.split(|&b| b == b'\n') {
                    let fresh_noise = gs.is_noise(line, &mut LineMemo::default());
                    let fresh_record = gs.starts_record(line, &mut LineMemo::default());
                    assert_eq!(gs.is_noise(line, &mut carried), fresh_noise);
                    assert_eq!(gs.starts_record(line, &mut carried), fresh_record);
                    lines += 1;
                    noise += u32::from(fresh_noise);
                    records += u32::from(fresh_record);
                }
            }
        }
        // Both answers occur many times, so the memo was both used and passed over.
        assert!(
            lines > 2_000 && noise > 100 && records > 500,
            "{lines} {noise} {records}"
        );
    }
}
