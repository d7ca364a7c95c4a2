//! Trial 19 of issue 28 (`cormorant-serve`, `tests/fixtures/made-up-server-21/`, written
//! from docs/grammars.md alone): a fork of SGLang over two nodes, TP16 (TP0–TP7 in
//! `node0/`, TP8–TP15 in `node1/`). In `failing/` (`model_path` on a slow NFS mount) TP11
//! prints its weight-load begin line (node1 line 22, 09:14:15 on its clock) and nothing
//! more; the other fifteen finish weight load and, 600 s into the barrier after it, print
//! `watchdog: collective post_load_barrier timed out after 600 s waiting for rank 11`
//! (node0 lines 36–43, node1 36–42); node 0's launcher then reports the failure (line
//! 44). `grammar-stalled.toml` is the trial's first grammar, whose watchdog event says
//! `outcome = "stalled"` (the final one says `consequence`);
//! `grammar-launcher-terminates.toml` makes the launcher's line a termination. Values by
//! `grep -n`.

use super::common;

use common::flat;

const DIR: &str = "tests/fixtures/made-up-server-21";

/// M1: stall lines that name the rank they waited for follow it, when it stalled itself:
/// TP11 is the one stalled rank, the fifteen are consequences of it (they were sixteen
/// ranks stalled alike, no rank after another).
#[test]
fn stalls_naming_the_hung_rank_follow_it() {
    // `grammar-launcher-terminates.toml`: the launcher's give-up line ends the others
    // (`set.outcome = "terminated"`); read before the silence, it made TP11 `terminated`.
    for grammar in [
        "grammar-stalled.toml",
        "grammar.toml",
        "grammar-launcher-terminates.toml",
    ] {
        let s = common::fixture_json(DIR, grammar, &["summary", "--json", "failing"]);
        let tp11 = &common::rank_entry(&s, "TP11")["failure"];
        assert_eq!(tp11["outcome"], "stalled", "{grammar}");
        assert_eq!(tp11["source"], "failing/node1/cormorant.log", "{grammar}");
        assert_eq!(tp11["line"], 22, "{grammar}");
        for r in (0..16).filter(|&r| r != 11) {
            let f = &common::rank_entry(&s, &format!("TP{r}"))["failure"];
            assert_eq!(f["outcome"], "consequence", "{grammar} TP{r}");
            assert_eq!(f["consequence_of"], "TP11", "{grammar} TP{r}");
            assert_eq!(f["phase"], "weight_load", "{grammar} TP{r}");
        }
    }
    let (_, text) = common::fixture_run(DIR, "grammar-stalled.toml", &["summary", "failing"]);
    assert!(
        flat(&text).contains("15/16 ranks: consequence (timeout in weight_load), after TP11"),
        "{text}"
    );
}

/// M2: `diff` words the hung rank as `summary` does: it stalled (it printed no timeout of
/// its own).
#[test]
fn diff_says_the_hung_rank_stalled() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    let text = flat(&text);
    assert!(
        text.contains("cause TP11 stalled in weight_load (failing/node1/cormorant.log:22)"),
        "{text}"
    );
    assert!(!text.contains("TP11 timed out"), "{text}");
}

/// Q6: where directories and a `host` capture both name nodes, the directory names the
/// node and the host shows beside it — checked with the nodes' directories swapped
/// (`node0/` holds host n1's log: TP8–TP15), so a host that named the node would rename
/// them. Only a file whose own lines name two hosts is split by host, its parts named by
/// the host: both logs as one file in one directory give nodes `n0` and `n1`.
#[test]
fn directories_name_nodes_before_hosts() {
    let grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    let with_host = grammar.replace(
        r"(?P<time>\d{2}:\d{2}:\d{2}) n\d+ ",
        r"(?P<time>\d{2}:\d{2}:\d{2}) (?P<host>n\d+) ",
    );
    assert_ne!(
        grammar, with_host,
        "the prefix's host token is where it was"
    );
    let (temp, name) = common::temp_in(DIR);
    let root = temp.path();
    std::fs::write(root.join("grammar-host.toml"), with_host).unwrap();
    let log = |node: &str| format!("{DIR}/baseline/{node}/cormorant.log");
    for (dir, from) in [("swapped/node0", "node1"), ("swapped/node1", "node0")] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        std::fs::copy(log(from), root.join(dir).join("cormorant.log")).unwrap();
    }
    std::fs::create_dir_all(root.join("one/logs")).unwrap();
    let both = std::fs::read_to_string(log("node0")).unwrap()
        + &std::fs::read_to_string(log("node1")).unwrap();
    std::fs::write(root.join("one/logs/all.log"), both).unwrap();

    let grammar = format!("{name}/grammar-host.toml");
    let nodes = |run: &str| -> Vec<(String, Vec<String>, String)> {
        let s = common::fixture_json(
            DIR,
            &grammar,
            &["summary", "--json", &format!("{name}/{run}")],
        );
        s["run"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                let strings = |k: &str| -> Vec<String> {
                    n[k].as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_str().unwrap().to_string())
                        .collect()
                };
                let ranks = strings("ranks");
                let span = format!("{}…{}", ranks[0], ranks[ranks.len() - 1]);
                (
                    n["name"].as_str().unwrap().to_string(),
                    strings("hosts"),
                    span,
                )
            })
            .collect()
    };
    let mut swapped = nodes("swapped");
    swapped.sort();
    assert_eq!(
        swapped,
        [
            ("node0".into(), vec!["n1".to_string()], "TP8…TP15".into()),
            ("node1".into(), vec!["n0".to_string()], "TP0…TP7".into()),
        ]
    );
    let mut one = nodes("one");
    one.sort();
    assert_eq!(
        one,
        [
            ("n0".into(), vec!["n0".to_string()], "TP0…TP7".into()),
            ("n1".into(), vec!["n1".to_string()], "TP8…TP15".into()),
        ]
    );
}
