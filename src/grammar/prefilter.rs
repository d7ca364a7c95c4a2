//! The literal prefilter: fragments every event pattern must contain, so that a line
//! holding none of them is rejected without running a regex.

/// Most fragments per automaton of the buffer prefilter: each automaton is one pass of
/// Teddy over every block, and a pass costs about the same whatever its pattern count up
/// to Teddy's limit of 64 (one pass of the built-in grammars' fragments scanned the
/// shared benchmark log in half the time of two passes of half as many each).
pub(super) const FRAGMENTS_PER_GROUP: usize = 64;

/// Lines a serving log repeats for hours, one per request or per scheduler step, of the
/// servers the built-in grammars read (written for this list, values made up). A
/// fragment found in them would send every such line down the event path (a cleaned
/// copy, the literal automata, the events' regexes: a thousand times the cost of a
/// rejected line), so no fragment is taken from them.
pub(super) const TRAFFIC: &[&str] = &[
    "[2026-03-04 10:11:12 DP0 TP0 EP0] Decode batch. #running-req: 12, #token: 3456, token usage: 0.07, cuda graph: True, gen throughput (token/s): 512.34, #queue-req: 0,",
    "[2026-03-04 10:11:12 TP0] Prefill batch. #new-seq: 1, #new-token: 128, #cached-token: 0, cache hit rate: 0.00%, token usage: 0.01, #running-req: 0, #queue-req: 0, input throughput (token/s): 1.23",
    "[2026-03-04 10:11:12] INFO:     127.0.0.1:51234 - \"POST /generate HTTP/1.1\" 200 OK",
    "[2026-03-04 10:11:12] Receive: obj=GenerateReqInput(rid='0123abcd', text='Hello', sampling_params={'max_new_tokens': 16})",
    "[2026-03-04 10:11:12] Finish: obj=GenerateReqInput(rid='0123abcd'), out={'meta_info': {'prompt_tokens': 5, 'completion_tokens': 16}}",
    "(APIServer pid=123) INFO 03-04 10:11:12 [loggers.py:123] Engine 000: Avg prompt throughput: 12.3 tokens/s, Avg generation throughput: 45.6 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.2%, Prefix cache hit rate: 0.0%",
    "INFO 03-04 10:11:12 metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 12.3 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.4%, CPU KV cache usage: 0.0%.",
    "(APIServer pid=123) INFO:     10.0.0.1:40000 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
    "INFO 03-04 10:11:12 [logger.py:39] Received request chatcmpl-0123abcd: prompt: 'Hi', params: SamplingParams(n=1, temperature=0.7, max_tokens=16), prompt_token_ids: None, lora_request: None.",
    "INFO 03-04 10:11:12 engine.py:280] Added request cmpl-0123abcd-0.",
    "INFO 03-04 10:11:12 async_llm_engine.py:140] Finished request cmpl-0123abcd-0.",
    "2026-03-04T10:11:12.123456Z  INFO generate{parameters=GenerateParameters { max_new_tokens: Some(16) } total_time=\"1.2s\" validation_time=\"1ms\" queue_time=\"1ms\" inference_time=\"1.2s\" time_per_token=\"70ms\" seed=\"None\"}: text_generation_router::server: Success",
    "[TensorRT-LLM][INFO] Iteration 1234: active requests 3, generated tokens 48, queued 0",
    "2026-03-04 10:11:12,123 - lmdeploy - INFO - turbomind.py:500 - session 12 start, step 0, request_output_len 16",
    "host-1:123:456 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
];

/// The bytes of a fragment Teddy compares first, at every position of a block: where they
/// occur, the fragment is compared whole (a miss costs a verification).
fn teddy_head(w: &[u8]) -> &[u8] {
    w.get(..FRAGMENT_MIN).unwrap_or(w)
}

/// `items` in the fewest groups of at most `max`, of sizes as equal as they can be.
pub(super) fn balanced_groups<T>(items: &[T], max: usize) -> std::slice::Chunks<'_, T> {
    let groups = items.len().div_ceil(max.max(1)).max(1);
    items.chunks(items.len().div_ceil(groups).max(1))
}

/// Lines a start-up repeats on every rank (SGLang's capture progress bar, a line per
/// batch size; values made up): ordinary text for the fragments' choice, as [`TRAFFIC`]
/// is, but not part of the sample Teddy's order is judged by (`teddy`), which is the
/// traffic of hours.
pub(super) const REPEATED_AT_START_UP: &[&str] = &[
    "Capturing batches (bs=96 avail_mem=31.25 GB):  25%|##5       | 3/12 [00:01<00:03,  2.71it/s]",
];

/// Fragment lengths for the prefilter (`prefilter_fragments`): long enough that a
/// SIMD search rarely stops on ordinary text, short enough to be shared by literals.
pub(super) const FRAGMENT_MIN: usize = 4;
pub(super) const FRAGMENT_MAX: usize = 8;

/// A fragment of lower-case letters and spaces only is taken when it is at least this
/// long: shorter ones (`graph`, `the `) are in most English text.
pub(super) const PLAIN_FRAGMENT_MIN: usize = 6;

/// The strings the buffer prefilter looks for: fragments of the event literals such that
/// every literal contains one, so no line holding a literal is missed. Greedily, the
/// fragment shared by most literals not yet covered (then the longest, then the one with
/// most bytes other than lower-case letters and spaces) is taken, until all are covered:
/// `memory` and `failed` each stand for several literals. A fragment found in `ordinary`
/// text — a record start, a noise literal (`INFO `, `NCCL_`) or a line of [`TRAFFIC`]
/// (`cuda grap`, `Engine`) — would stop the search on lines that are no events and is
/// never chosen, nor is one whose first four bytes are found there ([`teddy_head`]:
/// `complete` stopped Teddy at every `/v1/chat/completions`), nor one of lower-case
/// letters and spaces shorter than [`PLAIN_FRAGMENT_MIN`]; a literal with no other
/// fragment is looked for whole. With the built-in grammars, 133 literals become 60
/// fragments: one automaton, one pass.
pub(super) fn prefilter_fragments(literals: &[String], ordinary: &[&str]) -> Vec<Vec<u8>> {
    fn windows(s: &[u8]) -> impl Iterator<Item = &[u8]> {
        (FRAGMENT_MIN..=FRAGMENT_MAX.min(s.len())).flat_map(move |n| s.windows(n))
    }
    let plain = |w: &[u8]| {
        w.len() < PLAIN_FRAGMENT_MIN && w.iter().all(|&b| b.is_ascii_lowercase() || b == b' ')
    };
    // foldhash, not SipHash, and no ordered map: thousands of windows of a few bytes are
    // hashed at every start-up, and the choice below orders fragments by their bytes
    // itself, so the map's order never shows.
    type Hasher = foldhash::fast::RandomState;
    // Only the ordinary text's four-byte windows: a fragment found there whole begins
    // with one of them, so the test of its head is the test of the whole.
    let ordinary: std::collections::HashSet<&[u8], Hasher> = (ordinary.iter())
        .chain(TRAFFIC)
        .chain(REPEATED_AT_START_UP)
        .flat_map(|c| c.as_bytes().windows(FRAGMENT_MIN))
        .collect();
    // Which literals each usable fragment covers, as a bit set over literal indices.
    let words = literals.len().div_ceil(64);
    let bit = |i: usize| (i / 64, 1u64 << (i % 64));
    let mut cover: std::collections::HashMap<&[u8], Vec<u64>, Hasher> = Default::default();
    for (i, lit) in literals.iter().enumerate() {
        for w in windows(lit.as_bytes()) {
            if plain(w) || ordinary.contains(teddy_head(w)) {
                continue;
            }
            let set = cover.entry(w).or_insert_with(|| vec![0; words]);
            let (word, mask) = bit(i);
            if let Some(x) = set.get_mut(word) {
                *x |= mask;
            }
        }
    }
    let mut uncovered = vec![0u64; words];
    let mut out: Vec<Vec<u8>> = Vec::new();
    for (i, lit) in literals.iter().enumerate() {
        let (word, mask) = bit(i);
        if windows(lit.as_bytes()).any(|w| cover.contains_key(w)) {
            if let Some(x) = uncovered.get_mut(word) {
                *x |= mask;
            }
        } else {
            out.push(lit.as_bytes().to_vec());
        }
    }
    let rare = |w: &[u8]| {
        w.iter()
            .filter(|&&b| !(b.is_ascii_lowercase() || b == b' '))
            .count()
    };
    let still_covers = |set: &[u64], uncovered: &[u64]| -> u32 {
        set.iter()
            .zip(uncovered)
            .map(|(a, b)| (a & b).count_ones())
            .sum()
    };
    // Lazy greedy: a fragment's count of uncovered literals only falls as others are
    // taken, so a count computed earlier bounds it. The top of the heap is the best
    // fragment once its count is found unchanged; otherwise it goes back with the new
    // count. The same choices, in the same order, as rescanning every fragment per step
    // (ties go to the larger fragment in byte order, as `max_by_key` over the sorted map
    // did), without the rescans: those were 40 % of a run's start-up.
    // (uncovered literals it covers, length, rare bytes), fragment.
    type Ranked<'a> = ((u32, usize, usize), &'a [u8]);
    let mut heap: std::collections::BinaryHeap<Ranked> = cover
        .iter()
        .map(|(w, set)| ((still_covers(set, &uncovered), w.len(), rare(w)), *w))
        .collect();
    while let Some(((n, len, rare_bytes), w)) = heap.pop() {
        let set = &cover[w];
        let now = still_covers(set, &uncovered);
        if now == 0 {
            continue;
        }
        if now < n {
            heap.push(((now, len, rare_bytes), w));
            continue;
        }
        out.push(w.to_vec());
        for (u, s) in uncovered.iter_mut().zip(set) {
            *u &= !s;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn shared_fragment_first_and_short_plain_windows_never() {
        let lits: Vec<String> = [
            "CUDA out of memory",
            "CUDA error",
            "bad state",
            "graph begin",
        ]
        .map(String::from)
        .to_vec();
        // By hand: "CUDA " (5 bytes) is the longest window both CUDA literals hold, so it
        // covers two at once. "bad state" is lower-case letters and spaces only: its
        // windows of 6 to 8 bytes are usable, the longest (8: "ad state", "bad stat")
        // tie and the last in byte order, "bad stat", is taken. "graph begin" likewise,
        // but of its 8-byte windows ("aph begi", "graph be", "ph begin", "raph beg") two
        // begin with bytes TRAFFIC holds ("grap", "raph": `cuda graph: True`), which
        // would stop Teddy on every decode line: "ph begin" is the later of the others.
        // Each covers one literal, so "CUDA " comes first, then the later in byte order.
        let got = prefilter_fragments(&lits, &["INFO "]);
        assert_eq!(
            got,
            vec![
                b"CUDA ".to_vec(),
                b"ph begin".to_vec(),
                b"bad stat".to_vec()
            ]
        );
        // A literal of lower-case letters and spaces shorter than PLAIN_FRAGMENT_MIN
        // has no window to take and is looked for whole (those come first).
        let short: Vec<String> = ["a b c", "Load weight"].map(String::from).to_vec();
        let got = prefilter_fragments(&short, &[]);
        assert_eq!(got.first(), Some(&b"a b c".to_vec()));
    }

    #[test]
    fn ordinary_text_is_never_a_fragment() {
        // "NCCL INFO x" holds "INFO " like the record start given as ordinary, and the
        // NCCL INFO line of TRAFFIC holds "NCCL", "CCL " and every window of "NCCL INFO",
        // so neither literal's NCCL part may stand for it: the two share no usable
        // window. Nor may a window that begins with four bytes of ordinary text (Teddy
        // would stop there): of "NCCL WARN" that leaves "CL WARN" and shorter; of
        // "NCCL INFO x" only windows ending in " x" are not ordinary, and of those
        // "L INFO x", " INFO x", "INFO x" and "NFO x" begin like "NCCL INFO Channel",
        // which leaves "FO x". The longer is taken first.
        let lits: Vec<String> = ["NCCL INFO x", "NCCL WARN"].map(String::from).to_vec();
        let got = prefilter_fragments(&lits, &["INFO "]);
        assert_eq!(got, vec![b"CL WARN".to_vec(), b"FO x".to_vec()]);
    }

    #[test]
    fn every_builtin_frame_phase_entry_is_proved_by_its_sample() {
        // Each `[[frame_phase]]` entry of every built-in grammar carries a frame line, and
        // `grammars check` reads that line to the entry's phase.
        let gs = GrammarSet::builtin().unwrap();
        let mut n = 0;
        for (i, g) in gs.grammars.iter().enumerate() {
            for f in &g.spec.frame_phase {
                assert!(
                    f.sample.is_some(),
                    "{}: frame_phase {:?}/{:?} has no sample",
                    g.origin,
                    f.function,
                    f.file
                );
                n += 1;
            }
            let check = check_samples(&gs, i, &crate::model::config::read_sample);
            assert_eq!(check.failures, Vec::<String>::new(), "{}", g.origin);
        }
        assert!(n > 40, "{n} frame_phase entries");
    }

    #[test]
    fn a_frame_sample_of_the_wrong_phase_fails_the_check() {
        let toml = r#"
id = "fx"
name = "frame sample check"
[[frame_phase]]
function = "warm_the_pool"
phase = "kv_cache"
sample = '  File "/x/pool.py", line 3, in warm_the_pool'
[[frame_phase]]
function = "fill_the_pool"
phase = "cuda_graph"
sample = '  File "/x/pool.py", line 9, in warm_the_pool'
[[frame_phase]]
function = "drain"
phase = "ready"
sample = 'not a frame line'
"#;
        let g = Grammar::from_toml(toml, "fx.toml").unwrap();
        let gs = GrammarSet::new(vec![g]).unwrap();
        let failures = check_samples(&gs, 0, &crate::model::config::read_sample).failures;
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].contains("phase `kv_cache`, expected `cuda_graph`"));
        assert!(failures[1].contains("no frame → phase entry names this frame"));
    }

    #[test]
    fn every_builtin_regex_compiles() {
        // Built-in regexes are compiled on first use; this is where one that parses but
        // does not compile (too large) would be found. And each group's index, read from
        // the pattern's text or its parse, is the compiled regex's own.
        let gs = GrammarSet::builtin().unwrap();
        let (mut events, mut prefixes, mut others) = (0, 0, 0);
        for g in &gs.grammars {
            for (what, r) in g.every_regex() {
                let compiled = r.get();
                assert!(compiled.is_some(), "{}: {what}", g.origin);
                for name in r.capture_names() {
                    let want =
                        compiled.and_then(|c| c.capture_names().position(|c| c == Some(name)));
                    assert_eq!(r.group_index(name), want, "{}: {what}: {name}", g.origin);
                }
                match what.split(' ').next() {
                    Some("event") => events += 1,
                    Some("prefix") => prefixes += 1,
                    _ => others += 1,
                }
            }
        }
        assert!(events > 100, "{events} built-in events");
        assert!(prefixes > 10, "{prefixes} built-in prefixes");
        // Outcome wordings, process names and suffixes.
        assert!(others > 10, "{others} other built-in regexes");
    }

    #[test]
    fn every_builtin_regex_reads_its_ascii_samples_the_same_with_its_twin() {
        // The twin (`LazyRegex::for_text`) must read every group of every sample line
        // as the pattern does, and number its groups the same.
        let gs = GrammarSet::builtin().unwrap();
        let (mut twins, mut compared) = (0, 0);
        for g in &gs.grammars {
            let regexes = (g.events.iter().map(|e| (e.kind.as_str(), &e.regex)))
                .chain(g.prefixes.iter().map(|p| (p.id.as_str(), &p.regex)));
            for (what, lazy) in regexes {
                let (Some(pattern), Some(twin)) = (lazy.get(), lazy.for_text("ascii")) else {
                    panic!("{}: {what} does not compile", g.origin);
                };
                if std::ptr::eq(pattern, twin) {
                    continue;
                }
                twins += 1;
                assert!(
                    pattern.capture_names().eq(twin.capture_names()),
                    "{}: {what}: {} against {}",
                    g.origin,
                    pattern.as_str(),
                    twin.as_str()
                );
                for sample in g.spec.sample.iter().filter(|s| s.line.is_ascii()) {
                    let spans = |r: &regex::Regex| {
                        r.captures_iter(&sample.line)
                            .map(|c| c.iter().map(|m| m.map(|m| m.range())).collect())
                            .collect::<Vec<Vec<_>>>()
                    };
                    let want = spans(pattern);
                    assert_eq!(spans(twin), want, "{}: {what}: {:?}", g.origin, sample.line);
                    compared += usize::from(!want.is_empty());
                }
            }
        }
        assert!(twins > 100, "{twins} built-in regexes with a twin");
        assert!(compared > 100, "{compared} sample lines read by a twin");
    }

    #[test]
    fn a_user_regex_too_large_to_compile_is_a_load_error() {
        let toml = r#"
id = "big"
name = "Big"
description = "one event regex over the size limit"
[[event]]
kind = "weights_loaded"
literals = ["Loaded"]
regex = '(?:\w{100}){200}Loaded'
"#;
        let lazy = LazyRegex::new(r"(?:\w{100}){200}Loaded", false).unwrap();
        assert!(
            lazy.get().is_none(),
            "the pattern must exceed the size limit"
        );
        match Grammar::from_toml(toml, "/tmp/big.toml") {
            Err(GrammarError::Regex { origin, kind, .. }) => {
                assert_eq!(
                    (origin.as_str(), kind.as_str()),
                    ("/tmp/big.toml", "weights_loaded")
                )
            }
            other => panic!("expected a regex error, got {:?}", other.err()),
        }
    }

    /// The grammars' distinct event literals, as `GrammarSet::new` collects them, and the
    /// text no fragment may come from (record starts and noise literals).
    fn literals_and_ordinary(gs: &GrammarSet) -> (Vec<String>, Vec<String>) {
        let mut lits: Vec<String> = Vec::new();
        let mut ordinary = Vec::new();
        for g in &gs.grammars {
            for l in g.spec.event.iter().flat_map(|e| &e.literals) {
                if !lits.contains(l) {
                    lits.push(l.clone());
                }
            }
            for p in &g.spec.prefix {
                ordinary.extend(p.starts_with.iter().cloned());
            }
            for n in &g.spec.noise {
                ordinary.extend(n.literals.iter().cloned());
            }
        }
        (lits, ordinary)
    }

    /// The built-in literals, the ordinary text, and the fragments chosen from them.
    fn builtin_fragments(gs: &GrammarSet) -> (Vec<String>, Vec<String>, Vec<Vec<u8>>) {
        let (lits, ordinary) = literals_and_ordinary(gs);
        let view: Vec<&str> = ordinary.iter().map(String::as_str).collect();
        let frags = prefilter_fragments(&lits, &view);
        (lits, ordinary, frags)
    }

    /// The greedy choice as first written: every fragment's count computed again at each
    /// step. The reference `prefilter_fragments`' lazy heap must agree with, choice for
    /// choice and in order.
    fn fragments_by_rescanning(literals: &[String], ordinary: &[&str]) -> Vec<Vec<u8>> {
        let windows = |s: &[u8]| -> Vec<Vec<u8>> {
            (FRAGMENT_MIN..=FRAGMENT_MAX.min(s.len()))
                .flat_map(|n| s.windows(n).map(<[u8]>::to_vec))
                .collect()
        };
        let plain = |w: &[u8]| {
            w.len() < PLAIN_FRAGMENT_MIN && w.iter().all(|&b| b.is_ascii_lowercase() || b == b' ')
        };
        let ordinary: std::collections::HashSet<Vec<u8>> = (ordinary.iter())
            .chain(TRAFFIC)
            .chain(REPEATED_AT_START_UP)
            .flat_map(|c| windows(c.as_bytes()))
            .collect();
        let mut cover: BTreeMap<Vec<u8>, std::collections::BTreeSet<usize>> = BTreeMap::new();
        for (i, lit) in literals.iter().enumerate() {
            for w in windows(lit.as_bytes()) {
                if !plain(&w) && !ordinary.contains(&w) && !ordinary.contains(teddy_head(&w)) {
                    cover.entry(w).or_default().insert(i);
                }
            }
        }
        let mut out = Vec::new();
        let mut uncovered = std::collections::BTreeSet::new();
        for (i, lit) in literals.iter().enumerate() {
            if windows(lit.as_bytes())
                .iter()
                .any(|w| cover.contains_key(w))
            {
                uncovered.insert(i);
            } else {
                out.push(lit.as_bytes().to_vec());
            }
        }
        let rare = |w: &[u8]| {
            w.iter()
                .filter(|&&b| !(b.is_ascii_lowercase() || b == b' '))
                .count()
        };
        loop {
            let best = cover
                .iter()
                .map(|(w, set)| {
                    (
                        (set.intersection(&uncovered).count(), w.len(), rare(w)),
                        w,
                        set,
                    )
                })
                .max_by_key(|c| c.0);
            match best {
                Some(((n, _, _), w, set)) if n > 0 => {
                    out.push(w.clone());
                    uncovered.retain(|i| !set.contains(i));
                }
                _ => return out,
            }
        }
    }

    #[test]
    fn lazy_greedy_chooses_as_rescanning_does() {
        // The built-in grammars' literals and ordinary text, as `GrammarSet::new` gives
        // them, then made-up sets where many fragments tie (shared words, one literal
        // repeated with a digit changed), over more than 64 literals (two bit words).
        let gs = GrammarSet::builtin().unwrap();
        let (lits, ordinary, builtin) = builtin_fragments(&gs);
        let ordinary: Vec<&str> = ordinary.iter().map(String::as_str).collect();
        assert_eq!(builtin, fragments_by_rescanning(&lits, &ordinary));
        assert!(builtin.len() > 40, "{} fragments", builtin.len());
        let made_up: Vec<String> = (0..90)
            .map(|i| match i % 3 {
                0 => format!("Load weight {i} end"),
                1 => format!("KV cache pool {} GiB", i / 7),
                _ => format!("graph capture bs={i}"),
            })
            .collect();
        assert_eq!(
            prefilter_fragments(&made_up, &["INFO "]),
            fragments_by_rescanning(&made_up, &["INFO "])
        );
    }

    #[test]
    fn every_builtin_literal_holds_a_fragment() {
        let gs = GrammarSet::builtin().unwrap();
        let (frags, literal_count) = {
            let (lits, _, f) = builtin_fragments(&gs);
            for l in &lits {
                assert!(
                    f.iter()
                        .any(|x| memchr::memmem::find(l.as_bytes(), x).is_some()),
                    "{l} holds no fragment"
                );
            }
            (f, lits.len())
        };
        // Fewer automata than the literals need: the point of the fragments.
        assert!(
            frags.len().div_ceil(FRAGMENTS_PER_GROUP) < literal_count.div_ceil(FRAGMENTS_PER_GROUP),
            "{} fragments for {literal_count} literals",
            frags.len()
        );
        // And every literal, written on a line of its own, is a hit of the prefilter.
        for g in &gs.grammars {
            for e in &g.spec.event {
                for l in &e.literals {
                    let line = format!("x {l} y\n");
                    assert!(!gs.literal_hits(line.as_bytes()).is_empty(), "{l}");
                }
            }
        }
    }

    #[test]
    fn the_builtin_fragments_in_teddy_order_stop_less_on_traffic() {
        // Teddy's tables, as aho-corasick 1.1 fills them (pattern i of the list opens
        // bucket 15 - i % 16; one of the same low nibbles as an earlier one, longest
        // first, joins that one's bucket), and the windows of made-up traffic that pass
        // a bucket's tables: each is a comparison of that bucket's patterns. Lines like
        // TRAFFIC's with other values, so not the sample the order was chosen on.
        let gs = GrammarSet::builtin().unwrap();
        let (_, _, frags) = builtin_fragments(&gs);
        let mut text = String::new();
        for i in 0..200u32 {
            text += &format!(
                "[2026-05-06 0{}:{:02}:{:02} TP{}] Decode batch. #running-req: {}, #token: {}, \
                 token usage: 0.{:02}, cuda graph: True, gen throughput (token/s): {}.{}, #queue-req: {},\n\
                 (APIServer pid={}) INFO 05-06 01:02:{:02} [loggers.py:116] Engine 000: Avg \
                 prompt throughput: {}.0 tokens/s, Avg generation throughput: {}.5 tokens/s, \
                 Running: {} reqs, Waiting: 0 reqs, GPU KV cache usage: {}.1%, Prefix cache hit \
                 rate: 2.{}%\n",
                i % 10, i % 60, (i * 7) % 60, i % 8, i % 97, i * 131, i % 100, i * 3, i % 10,
                i % 5, 4000 + i, i % 60, i * 11, i * 13, i % 30, i % 90, i % 10
            );
        }
        let passing = |order: &[usize]| -> usize {
            let pats: Vec<&[u8]> = order.iter().map(|&i| frags[i].as_slice()).collect();
            let mut by_length: Vec<usize> = (0..pats.len()).collect();
            by_length.sort_by_key(|&i| std::cmp::Reverse(pats[i].len()));
            let mut bucket_of_nibbles = std::collections::HashMap::new();
            let mut tables = [[[0u16; 16]; 4]; 2];
            for i in by_length {
                let nibbles: Vec<u8> = pats[i][..4].iter().map(|b| b & 15).collect();
                let b = *bucket_of_nibbles.entry(nibbles).or_insert(15 - i % 16);
                for (j, &byte) in pats[i][..4].iter().enumerate() {
                    tables[0][j][usize::from(byte & 15)] |= 1 << b;
                    tables[1][j][usize::from(byte >> 4)] |= 1 << b;
                }
            }
            text.as_bytes()
                .windows(4)
                .map(|w| {
                    let mut pass = u16::MAX;
                    for (j, &byte) in w.iter().enumerate() {
                        pass &= tables[0][j][usize::from(byte & 15)];
                        pass &= tables[1][j][usize::from(byte >> 4)];
                    }
                    pass.count_ones() as usize
                })
                .sum()
        };
        let given: Vec<usize> = (0..frags.len()).collect();
        let chosen = super::super::teddy::teddy_order(&frags);
        let (given, chosen) = (passing(&given), passing(&chosen));
        assert!(
            chosen * 2 < given,
            "{chosen} windows pass in Teddy's order, {given} as given"
        );
    }

    #[test]
    fn traffic_lines_pass_the_prefilter_in_one_pass() {
        // Every built-in fragment fits one automaton (one pass over each block), and no
        // line of the request traffic the servers repeat stops it: before the traffic was
        // ordinary text, `Engine` (from `EngineCore failed`) was a fragment and every
        // vLLM V1 metrics line took the event path.
        let gs = GrammarSet::builtin().unwrap();
        assert_eq!(gs.prefilter.len(), 1);
        for line in TRAFFIC.iter().chain(REPEATED_AT_START_UP) {
            let hits = gs.literal_hits(line.as_bytes());
            assert!(hits.is_empty(), "{line}: {hits:?}");
        }
        // The capture bar as `mkranks.py` and SGLang's tqdm write it, other values: it
        // used to hit `pturing ` (16 lines of each rank file down the event path).
        for bar in [
            "Capturing batches (bs=128 avail_mem=0.64 GB):   6% Completed | 1/15 [00:00<00:02, 1.40it/s]",
            "Capturing batches (bs=8 avail_mem=70.12 GB):  93%|█████████▎| 14/15 [00:03<00:00,  4.01it/s]",
        ] {
            assert!(gs.literal_hits(bar.as_bytes()).is_empty(), "{bar}");
        }
        let own = "(APIServer pid=9) INFO 07-08 01:02:03 [loggers.py:99] Engine 001: Avg prompt \
                   throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: \
                   4 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 0.0%";
        assert!(gs.literal_hits(own.as_bytes()).is_empty());
    }

    #[test]
    fn groups_are_as_few_and_as_even_as_the_limit_allows() {
        let sizes = |n: usize, max: usize| -> Vec<usize> {
            let v: Vec<usize> = (0..n).collect();
            balanced_groups(&v, max).map(<[usize]>::len).collect()
        };
        assert_eq!(sizes(74, 40), vec![37, 37]);
        assert_eq!(sizes(81, 40), vec![27, 27, 27]);
        assert_eq!(sizes(40, 40), vec![40]);
        assert_eq!(sizes(3, 40), vec![3]);
        assert!(sizes(0, 40).is_empty());
    }
}
