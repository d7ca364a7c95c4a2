//! Trial 18 of issue 28 (`emberserve`, `tests/fixtures/made-up-server-20/`, written from
//! docs/grammars.md alone): a DeepSpeed-FastGen copy started by the `deepspeed` launcher,
//! TP4, one merged `ember.log`. Rank 0 prints its inference config as pretty-printed JSON
//! over several lines *after* distributed init (`DeepSpeed-Inference config: {`, line 25 of
//! baseline). In `failing/` (`state_manager.memory_config.size` 4096 → 6144) TP2's bare
//! traceback ends in `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 75.00
//! GiB` (line 75) and the launcher kills the others (`Killing subprocess 4101…`, 76–78).
//! Values by `grep -n` and EXPECTED.md's hand sums.

use super::common;

use common::flat;

const DIR: &str = "tests/fixtures/made-up-server-20";

/// M2: a configuration printed after distributed init is the same start-up, not a second
/// attempt (it was: summary showed attempt 2, with no dist_init and a 0.1 s launch).
#[test]
fn a_configuration_after_dist_init_starts_no_attempt() {
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "baseline"]);
    assert_eq!(s["identity"]["attempts"], 1);
    assert_eq!(
        s["identity"]["first_line"]["at"],
        "2026-12-02T09:14:01.220000-00:00"
    );
    let phase = |name: &str| {
        (s["run"]["phases"].as_array().unwrap().iter())
            .find(|p| p["phase"] == name)
            .unwrap()
            .clone()
    };
    // Launch: 09:14:01.220 to each rank's first line, 05.100 + 0.02 × rank: 3.88, 3.90,
    // 3.92, 3.94 s; the median of four is (3.90 + 3.92) / 2.
    assert_eq!(phase("launch")["duration_s"]["median"], 3.91);
    assert_eq!(phase("dist_init")["duration_s"]["max"], 3.3);
    assert_eq!(s["run"]["ready"], true);
}

/// M1: the configuration's sample, a line that ends inside the JSON object, passes with
/// `traceback = true`, and the check says where its settings are.
#[test]
fn a_pretty_printed_json_configuration_sample_passes() {
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(DIR)
        .args(["--color", "never", "grammars", "check", "grammar.toml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(
            "15 samples checked, 0 failed; configuration read: sample 4, 0 settings on its \
             line, the rest on the lines after"
        ),
        "{text}"
    );
}

/// The failure, the launcher's kills (each other rank terminated after TP2, M3) and the
/// trigger quoted with the suspect's word as the grammar writes it (M4).
#[test]
fn tp2s_oom_the_kills_and_the_trigger() {
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let tp2 = &common::rank_entry(&s, "TP2")["failure"];
    assert_eq!(tp2["kind"], "oom");
    assert_eq!(tp2["phase"], "kv_cache");
    assert_eq!(tp2["phase_from"], "frames");
    assert_eq!(tp2["line"], 75);
    for rank in ["TP0", "TP1", "TP3"] {
        let f = &common::rank_entry(&s, rank)["failure"];
        assert_eq!(f["outcome"], "terminated", "{rank}");
        assert_eq!(f["consequence_of"], "TP2", "{rank}");
        assert_eq!(f["line"], 76, "{rank}");
    }
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    assert!(
        flat(&text).contains(
            "likely trigger: state_manager {\"memory_config\": {\"mode\": \"allocate\", \
             \"size\": 4096}, …} -> {\"memory_config\": {\"mode\": \"allocate\", \"size\": \
             6144}, …} (the failure holds \"CUDA out of memory\""
        ),
        "{text}"
    );
}
