//! What `summary` refuses and what it reads (issue 23): only input that is not text, or in
//! which nothing is recognised, is refused (exit 2); a bare Python traceback, c10 output,
//! server lines without a phase line and a line of glued progress bars are server output,
//! read with exit 0. Every input here is written for this test.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use predicates::prelude::*;

fn rankscope() -> Command {
    let mut c = Command::cargo_bin("rankscope").expect("binary built");
    c.env("NO_COLOR", "1");
    c
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).expect("write");
    p.display().to_string()
}

#[test]
fn a_pickle_is_refused_with_the_mem_hint() {
    let dir = tempfile::tempdir().expect("tempdir");
    // PROTO 4, an empty dict, STOP: a pickle, not a log.
    let p = write(&dir, "snap.pickle", b"\x80\x04}\x94.");
    rankscope()
        .args(["summary", &p])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a start-up log"))
        .stderr(predicate::str::contains(format!("try `rankscope mem {p}`")));
}

#[test]
fn a_binary_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bytes = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    bytes.extend((0u8..=255).cycle().take(4096));
    let p = write(&dir, "a.out", &bytes);
    rankscope().args(["summary", &p]).assert().code(2);
}

#[test]
fn prose_is_still_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write(&dir, "notes.txt", b"peak GiB 1.94\nthe run went fine\n");
    rankscope()
        .args(["summary", &p])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a start-up log: 2 lines"));
}

const BARE_NEM: &str =
    "  File \"/srv/sglang/srt/model_executor/model_runner.py\", line 902, in init_memory_pool
    self.max_total_num_tokens = self.profile_max_num_token(total_gpu_memory)
  File \"/srv/sglang/srt/model_executor/model_runner.py\", line 866, in profile_max_num_token
    raise RuntimeError(
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.
";

const BARE_LOAD: &str = "  File \"/srv/vllm/v1/worker/gpu_worker.py\", line 213, in load_model
    self.model_runner.load_model()
  File \"/srv/vllm/model_executor/models/llama.py\", line 561, in load_weights
    param = params_dict[name]
KeyError: 'lm_head.weight_scale'
";

#[test]
fn a_bare_traceback_is_a_failure_of_the_one_rank_with_the_phase_from_its_frames() {
    let dir = tempfile::tempdir().expect("tempdir");
    // By hand: the frames run through profile_max_num_token (kv_cache) and the final line
    // is SGLang's not-enough-memory wording; line 5 closes the traceback.
    let p = write(&dir, "nem.log", BARE_NEM.as_bytes());
    rankscope()
        .args(["summary", &p])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "verdict: its only rank TP0 had not enough memory in kv_cache",
        ))
        .stdout(predicate::str::contains("(phase from frames)"))
        .stdout(predicate::str::contains(format!("{p}:5")));
    // A load_model frame outermost: weight loading; KeyError is an exception.
    let p = write(&dir, "load.log", BARE_LOAD.as_bytes());
    rankscope()
        .args(["summary", &p])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "TP0 raised an exception in weight_load",
        ));
}

#[test]
fn server_lines_without_a_phase_line_are_incomplete_not_refused_and_diff_says_why_it_cannot_compare(
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = "INFO 05-21 08:14:40 [__init__.py:239] Automatically detected platform cuda.\n\
               WARNING 05-21 08:14:44 [config.py:2972] Casting torch.bfloat16 to torch.float16.\n\
               INFO 05-21 08:14:44 [cuda.py:292] Using Flash Attention backend.\n";
    let p = write(&dir, "nophase.log", log.as_bytes());
    rankscope()
        .args(["summary", &p])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "no start-up event (no phase line, no failure) in 3 lines of vllm output",
        ));
    rankscope()
        .args(["diff", "samples/vllm-tp2", &p])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "candidate {p}: nothing to compare: no start-up event"
        )));
}

#[test]
fn one_line_of_glued_progress_bars_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Three ranks' weight-loading bars glued into one physical line (no newline between
    // tqdm updates), nothing else.
    let line = "Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:02<00:06,  2.10s/it]\rLoading safetensors checkpoint shards:  25% Completed | 1/4 [00:02<00:06,  2.14s/it]Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:04<00:04,  2.07s/it]\n";
    let p = write(&dir, "bars.log", line.as_bytes());
    rankscope()
        .args(["summary", &p])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("no start-up event"));
}

/// A run with no start-up event says which family its lines look like: each file with none
/// is sniffed (files that hold one are not, as the run then has a start-up), in a
/// directory of rank files as for one file.
#[test]
fn server_lines_without_a_start_up_say_which_family_they_look_like() {
    let dir = tempfile::tempdir().expect("tempdir");
    for rank in 0..2 {
        write(
            &dir,
            &format!("rank{rank}.log"),
            format!(
                "[2026-11-29 09:18:12 TP{rank}] Prefill batch. #new-seq: 1\n\
                 [2026-11-29 09:18:13 TP{rank}] Decode batch. #running-req: 1\n"
            )
            .as_bytes(),
        );
    }
    rankscope()
        .args([
            "summary",
            "--width",
            "200",
            &dir.path().display().to_string(),
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "no start-up events found (line prefixes look like sglang)",
        ))
        .stdout(predicate::str::contains(
            "no start-up event (no phase line, no failure) in 4 lines of sglang output",
        ));
}
