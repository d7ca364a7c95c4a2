//! The memory breakdown and the capacity, against figures checked by hand on the sample
//! logs. GiB figures are the log's `GB` (SGLang means GiB) and `GiB`; every expected value
//! below is worked out in its comment from the lines it names, not copied from output.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::path::Path;

use rankscope::analysis::breakdown::{breakdown, RowValue, RunBreakdown};
use rankscope::analysis::capacity::{capacity, model_kv, ModelShape};
use rankscope::grammar::memory_model::Category;
use rankscope::grammar::GrammarSet;
use rankscope::report::{MemoryDiff, MemoryReport};
use rankscope::session::{LoadOptions, Session};

const GIB: f64 = (1u64 << 30) as f64;

fn load(path: &str) -> Session {
    let gs = GrammarSet::builtin().expect("grammars");
    Session::open(
        &gs,
        &[Path::new(path).to_path_buf()],
        &LoadOptions::default(),
        &|_, _| {},
    )
    .expect("loads")
}

/// A category's GiB on the breakdown's first group (every rank, when they agree).
fn gib(b: &RunBreakdown, c: Category) -> Option<f64> {
    b.groups[0].breakdown.bytes(c).map(|v| v as f64 / GIB)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

fn shape(name: &str) -> ModelShape {
    let text = std::fs::read_to_string(format!("tests/fixtures/models/{name}")).expect("fixture");
    ModelShape::from_json(&text).expect("config reads")
}

#[test]
fn tp8_baseline_breakdown_adds_up_from_the_log_lines() {
    let l = load("samples/tp8-baseline");
    let b = breakdown(&l.run).expect("sglang has a memory model");
    // All eight ranks print the same figures (server.log, TP0 at lines 15, 20, 26, 49,
    // 50, 68): one group.
    assert_eq!(b.groups.len(), 1);
    assert_eq!(b.groups[0].ranks.len(), 8);
    let g = &b.groups[0].breakdown;
    // Device: free before dist init = Load weight begin avail 14.00 (l.20) + Init torch
    // distributed mem usage 0.60 (l.15) = 14.60.
    let device = g.device.as_ref().expect("device");
    assert!(close(device.amount.bytes as f64 / GIB, 14.60));
    assert_eq!(
        device.amount.terms[0].origin.as_ref().map(|o| o.line),
        Some(20)
    );
    assert_eq!(
        device.amount.terms[1].origin.as_ref().map(|o| o.line),
        Some(15)
    );
    // dist_init mem usage 0.60 (l.15).
    assert!(close(gib(&b, Category::Communication).unwrap(), 0.60));
    // 14.00 (l.20) − 6.60 (l.26) = 7.40; the line's own `mem usage=7.29` is another
    // measure (the fixture README: allocator view), not the subtraction.
    assert!(close(gib(&b, Category::Weights).unwrap(), 7.40));
    // K 2.98 + V 2.98 (l.49) = 5.96.
    assert!(close(gib(&b, Category::KvPool).unwrap(), 5.96));
    // Memory pool end 0.64 (l.50) − capture end 0.01 (l.68) = 0.63 (capture's own mem
    // usage line says 0.63 too).
    assert!(close(gib(&b, Category::CudaGraphs).unwrap(), 0.63));
    // 6.60 − 0.64 − 5.96 = 0.00: nothing in the pool phase beside K and V.
    assert!(close(gib(&b, Category::Other).unwrap(), 0.0));
    assert!(close(gib(&b, Category::Free).unwrap(), 0.01));
    // Activations are not printed by SGLang: merged into free, and said so.
    assert_eq!(
        g.row(Category::Activations).map(|r| &r.value),
        Some(&RowValue::Merged(Category::Free))
    );
    assert_eq!(
        g.row(Category::Free).map(|r| r.includes.clone()),
        Some(vec![Category::Activations])
    );
    // 0.60 + 7.40 + 5.96 + 0.63 + 0.00 + 0.01 = 14.60 = device, within the printed
    // figures' half steps (0.005 GiB each).
    let c = g.closure.as_ref().expect("closure");
    assert!(c.holds(), "{c:?}");
    assert!(close(c.sum as f64 / GIB, 14.60));
    // Half a step (0.005 GiB = 5,368,709 bytes) per printed figure read: device 2,
    // communication 1, weights 2, KV pool 2 (K and V), graphs 2, other 3 + 1 (its pool
    // term is K + V), free 1 = 14.
    assert_eq!(c.tolerance, 14 * 5_368_709);
}

#[test]
fn tp8_custom_ar_moves_only_the_communication_category() {
    let b = load("samples/tp8-baseline");
    let c = load("samples/tp8-custom-ar");
    // With both runs' snapshots, as `diff` reads them.
    let report = c.diff_report(&b, Default::default());
    let moved = report
        .memory
        .moved
        .as_ref()
        .expect("both runs have a model");
    // Init torch distributed mem usage 0.60 → 0.64 (baseline l.15, candidate l.30):
    // +0.04 GiB = 42,949,673 bytes on all 8 ranks, beyond the two half steps (±10.24 MiB).
    // Weights: 14.00 − 6.60 and 13.96 − 6.56 are both 7.40; the pool is 5.96 in both.
    assert_eq!(moved.moved.len(), 1, "{:?}", moved.moved);
    let m = &moved.moved[0];
    assert_eq!(m.category, Category::Communication);
    assert_eq!(m.delta.get(), 42_949_673);
    assert_eq!((m.ranks_moved, m.ranks_compared), (8, 8));
    assert!(!moved.moved.iter().any(|m| m.category == Category::Other));
    // The candidate failed in capture: its graphs are not read, its free is the capture
    // begin's 0.60 (l.52) rather than capture end's: neither is compared.
    assert_eq!(
        moved.not_compared,
        vec![Category::CudaGraphs, Category::Free]
    );
    // The snapshots: the allocator reserved two 20 MiB segments at init_custom_ar
    // (41,943,040 bytes, ../shared/fixtures/gpu/README.md: "40 MiB reserved"); the rest,
    // 42,949,673 − 41,943,040 = 1,006,633, is within one print step.
    let s = moved.snapshot.as_ref().expect("snapshot split");
    assert_eq!(s.category, Category::Communication);
    assert_eq!(s.allocator.get(), 41_943_040);
    assert_eq!(s.residual.map(i64::from), Some(1_006_633));
    assert!(s.sites.iter().any(|x| x.starts_with("init_custom_ar")));
    // The pool is 91,141 tokens in both (l.46): sized before the buffers existed.
    assert_eq!(report.memory.cost.as_ref().map(|c| c.tokens_delta), Some(0));
}

#[test]
fn tp8_custom_ar_fixed_costs_597_tokens_per_rank() {
    let b = load("samples/tp8-baseline");
    let c = load("samples/tp8-custom-ar-fixed");
    let d = rankscope::analysis::diff::diff(&b.run, &c.run);
    let m = MemoryDiff::of(&b.run, &c.run, &d, None, &[4096, 8192], None);
    let cost = m.cost.expect("both pools");
    // max_total_num_tokens 91,141 (baseline) → 90,544 (server.log:57): −597, as the
    // fixture README says ("597 fewer KV tokens per rank").
    assert_eq!(cost.tokens_delta, -597);
    // SGLang pages are one token: −597 / 4096 = −0.1458 requests, −597 / 8192 = −0.0729.
    assert!((cost.per_length[0].1 - (-597.0 / 4096.0)).abs() < 1e-9);
    assert!((cost.per_length[1].1 - (-597.0 / 8192.0)).abs() < 1e-9);
    assert_eq!(
        cost.changes,
        vec!["enable_custom_allreduce False → True".to_string()]
    );
    let moved = m.moved.expect("moved");
    let cats: Vec<Category> = moved.moved.iter().map(|x| x.category).collect();
    // +0.04 at dist_init, and the pool 2 × 2.98 → 2 × 2.96 = −0.04.
    assert_eq!(cats, vec![Category::Communication, Category::KvPool]);
}

#[test]
fn tp8_capacity_in_requests_and_bytes_per_token() {
    let l = load("samples/tp8-baseline");
    let shape = shape("synthetic-61l-mla-config.json");
    let c = capacity(&l.run, &[4096, 8192], Some(&shape)).expect("capacity");
    // max_total_num_tokens=91141 on every rank (l.45).
    assert_eq!(c.pool_tokens, 91_141);
    assert!(!c.ranks_differ);
    assert_eq!(c.page_size, 1);
    // 91,141 / 4,096 = 22.25 → 22 requests; / 8,192 = 11.13 → 11; the server's cap,
    // max_running_requests=2048 (l.45), does not bind.
    assert_eq!(
        c.limit,
        Some(("kv_budget.max_running_requests".into(), 2048))
    );
    assert_eq!(
        c.lengths.iter().map(|r| r.requests).collect::<Vec<_>>(),
        vec![22, 11]
    );
    assert!(c.lengths.iter().all(|r| !r.limited));
    // Log: 5.96 GiB / 91,141 = 70,215.6 bytes per token, ± (2 half steps + one token's
    // bytes) / 91,141 ≈ 118.6.
    let log = c.log_per_token.as_ref().expect("log figure");
    assert!(
        (log.bytes - 6_399_501_271.04 / 91_141.0).abs() < 1.0,
        "{}",
        log.bytes
    );
    assert!((log.tolerance - 118.6).abs() < 0.5, "{}", log.tolerance);
    // Model: MLA, (512 + 64) × 61 layers × 2 bytes = 70,272, the same on every rank.
    let m = c.model_per_token.as_ref().expect("model figure");
    assert_eq!(m.per_token, 70_272);
    assert_eq!(c.model_matches_log(), Some(true));
    // SGLang's rule, 14.00 × 0.9 − (14.00 − 6.60) = 5.20 GiB, against the 5.96 GiB the
    // staged fixture allocated: it does not size its pool by SGLang's rule.
    let p = c.pool_check.as_ref().expect("rule");
    assert!((p.predicted as f64 / GIB - 5.20).abs() < 1e-6);
    assert!(!p.follows());
}

#[test]
fn vllm_capacity_matches_the_servers_concurrency_line() {
    let l = load("samples/vllm-tp2");
    let shape = shape("llama-70b-config.json");
    let c = capacity(&l.run, &[4096, 8192], Some(&shape)).expect("capacity");
    // GPU KV cache size: 365,904 tokens (l.20), in vLLM's default 16-token blocks.
    assert_eq!(c.pool_tokens, 365_904);
    assert_eq!((c.page_size, c.page_size_default), (16, true));
    // "Maximum concurrency for 8,192 tokens per request: 44.67x" (l.21):
    // 365,904 / 16 = 22,869 blocks; 8,192 / 16 = 512 per request; 22,869 / 512 = 44.666.
    let said = c.server_said.as_ref().expect("the server's line");
    assert_eq!((said.tokens, said.origin.line), (8192, 21));
    assert_eq!(
        format!("{:.2}", said.ours),
        format!("{:.2}", said.concurrency)
    );
    assert_eq!(c.lengths[1].requests, 44);
    // 4,096 tokens: 256 blocks each, 22,869 / 256 = 89.33 → 89.
    assert_eq!(c.lengths[0].requests, 89);
    // Model: TP 2 of 8 KV heads = 4 per rank × 128 × 80 layers × 2 × 2 bytes = 163,840.
    let m = c.model_per_token.as_ref().expect("model");
    assert_eq!(
        (m.per_token, m.heads_per_rank, m.replication),
        (163_840, 4, 1)
    );
    // Log: 55.84 GiB (l.18) / 365,904 = 163,862.0 bytes: 0.013 % from the model's, a
    // match (another dtype or head count would be 2× off).
    let log = c.log_per_token.as_ref().expect("log");
    assert!((log.bytes - 55.84 * GIB / 365_904.0).abs() < 1.0);
    assert_eq!(c.model_matches_log(), Some(true));
    // No max_num_seqs in the log: no cap applied.
    assert_eq!(c.limit, None);
}

#[test]
fn vllm_v0_pool_is_blocks_times_block_size() {
    let l = load("samples/vllm-v0-tp2");
    let c = capacity(&l.run, &[32768], None).expect("capacity");
    // "# GPU blocks: 18721" (l.17) × 16 = 299,536 tokens; "Maximum concurrency for 32768
    // tokens per request: 9.14x" (l.18): 18,721 / 2,048 blocks = 9.141.
    assert_eq!(c.pool_pages, Some(18_721));
    assert_eq!(c.pool_tokens, 299_536);
    let said = c.server_said.as_ref().expect("line");
    assert_eq!(format!("{:.2}", said.ours), "9.14");
    assert_eq!(c.lengths[0].requests, 9);
}

#[test]
fn kv_heads_fewer_than_ranks_are_replicated() {
    // 2 KV heads on TP 8: each rank still holds one head (4 ranks per head), so a token
    // costs 1 × 128 × 32 × 2 × 2 = 16,384 bytes per rank, not a quarter of a head.
    let s = ModelShape::from_json(
        r#"{"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 2,
            "hidden_size": 4096, "torch_dtype": "bfloat16"}"#,
    )
    .expect("reads");
    let m = model_kv(&s, 8, None);
    assert_eq!(
        (m.heads_per_rank, m.replication, m.per_token),
        (1, 4, 16_384)
    );
    // An fp8 KV cache halves it.
    assert_eq!(model_kv(&s, 8, Some("fp8_e4m3")).per_token, 8_192);
    // At TP 2: one head per rank, no replication, 1 × 128 × 32 × 2 × 2.
    let m = model_kv(&s, 2, None);
    assert_eq!(
        (m.heads_per_rank, m.replication, m.per_token),
        (1, 1, 16_384)
    );
    assert!(ModelShape::from_json(r#"{"num_hidden_layers": 2}"#).is_err());
    assert!(ModelShape::from_json("not json").is_err());
}

#[test]
fn vllm_breakdown_merges_what_the_log_does_not_separate() {
    let l = load("samples/vllm-tp2");
    let m = MemoryReport::of(&l.run, &[], None);
    let b = m.breakdown.expect("vllm has a memory model");
    // Model loading took 65.7221 GiB (l.16); Available KV cache memory 55.84 GiB (l.18);
    // graph capturing took 1.21 GiB (l.23).
    assert!(close(gib(&b, Category::Weights).unwrap(), 65.7221));
    assert!(close(gib(&b, Category::KvPool).unwrap(), 55.84));
    assert!(close(gib(&b, Category::CudaGraphs).unwrap(), 1.21));
    let g = &b.groups[0].breakdown;
    // No total, no activation or non-torch figure in this log: merged into other, which
    // cannot be computed without the device's total.
    assert!(g.device.is_none());
    assert_eq!(
        g.row(Category::Activations).map(|r| &r.value),
        Some(&RowValue::Merged(Category::Other))
    );
    assert_eq!(
        g.row(Category::Other).map(|r| &r.value),
        Some(&RowValue::NotReached)
    );
}

/// The real two-GPU runs: custom all-reduce accounted for costs 597 tokens, and the
/// 0.02 GiB at dist init lands in the communication category.
#[test]
#[ignore = "needs ../shared/fixtures/gpu2"]
fn gpu2_custom_ar_cost() {
    let base = "../shared/fixtures/gpu2/tp2_nccl_2gpu";
    assert!(
        Path::new(base).exists(),
        "../shared/fixtures/gpu2 is absent"
    );
    let b = load(base);
    let c = load("../shared/fixtures/gpu2/tp2_nccl_2gpu_customar");
    let d = rankscope::analysis::diff::diff(&b.run, &c.run);
    let m = MemoryDiff::of(&b.run, &c.run, &d, None, &[4096], None);
    // README: 1.44 → 1.46 GB at dist_init; 70,058 → 69,461 KV tokens.
    let moved = m.moved.expect("moved");
    let comm = moved
        .moved
        .iter()
        .find(|x| x.category == Category::Communication)
        .expect("communication moved");
    assert_eq!(comm.delta.get(), 21_474_836);
    assert_eq!(m.cost.map(|c| c.tokens_delta), Some(-597));
}

/// `summary --memory` splits the breakdown by the snapshots. `samples/tp8-custom-ar`,
/// TP0: `Init torch distributed ends … mem usage=0.64 GB` (server.log:30) against the
/// snapshot's two 20 MiB segments at `init_custom_ar`: 0.64 GiB − 40 MiB = 615.36 MiB
/// outside PyTorch. Weights: 13.96 − 6.56 = 7.40 GB (lines 33, 39) against the 7.40 GiB
/// `load_weights` reserved (`rankscope mem samples/tp8-custom-ar/snapshot_rank0.pickle`):
/// within the figure's ±10.24 MiB. KV pool: 2.98 + 2.98 GB (line 50) against the 5.96 GiB
/// of `kv_cache`, whose first allocation shares a second with `Load weight end`, so it
/// is placed by size (the weights have no room left for it). The baseline's
/// communication, 0.60 GB (server.log:15), has no allocator site at all.
#[test]
fn the_snapshots_split_the_breakdown_into_pytorch_and_the_rest() {
    use rankscope::analysis::held::{held, Placed};
    let s = load("samples/tp8-custom-ar");
    let h = held(&s.run, &s.snapshots().matched);
    assert_eq!(h.len(), 8, "one per rank's snapshot");
    let tp0 = &h[0];
    assert_eq!(tp0.rank.to_string(), "TP0");
    let cat = |c: Category| tp0.categories.iter().find(|x| x.category == c).unwrap();
    let mib = |x: f64| (x * 1_048_576.0) as i64;
    let gb = |x: f64| (x * GIB).round() as i64;
    let comm = cat(Category::Communication);
    assert_eq!(comm.reserved, mib(40.0));
    assert!(comm.sites[0].label.starts_with("init_custom_ar"));
    assert_eq!(comm.residual, Some(gb(0.64) - mib(40.0)));
    let w = cat(Category::Weights);
    assert!(w.sites[0].label.starts_with("load_weights"));
    assert!(w.residual.unwrap().abs() <= w.resolution, "{w:?}");
    let kv = cat(Category::KvPool);
    assert_eq!(kv.sites[0].placed, Placed::BySize);
    assert!(kv.sites[0].label.starts_with("kv_cache"));
    assert!(kv.residual.unwrap().abs() <= kv.resolution, "{kv:?}");
    // Capture failed: no graph figure in the breakdown to set the 602 MiB against.
    assert_eq!(cat(Category::CudaGraphs).residual, None);
    let b = load("samples/tp8-baseline");
    let hb = held(&b.run, &b.snapshots().matched);
    let comm = hb[0]
        .categories
        .iter()
        .find(|x| x.category == Category::Communication)
        .unwrap();
    assert_eq!((comm.reserved, comm.residual), (0, Some(gb(0.60))));
}

/// nvidia-smi against the breakdown, `samples/tp8-baseline`: one GPU in the CSV, so the
/// 8 ranks share it. Each took 14.00 + 0.60 − 0.01 = 14.59 GB (`Load weight begin avail`
/// plus `Init torch distributed mem usage` less `Capture cuda graph end avail`), 116.72
/// GiB in all.
/// The last `Capture cuda graph end` is stamped 09:18:19 (server.log:81); the first
/// sample a second later is 09:18:20.115, 120114 MiB (nvidia-smi-gpu.csv:71), t+11.1 s
/// after the first line (09:18:09). 120114 MiB − 116.72 GiB = 592.72 MiB, 74.09 MiB per
/// process; the CSV's first sample, before the run's first line, is 0 MiB.
#[test]
fn nvidia_smi_sees_the_ranks_figures_plus_what_each_process_holds_outside_them() {
    let s = load("samples/tp8-baseline");
    let m = MemoryReport::of(&s.run, &[], None);
    assert_eq!(m.smi.len(), 1);
    let c = &m.smi[0];
    assert_eq!((c.gpu, c.ranks.len()), (0, 8));
    assert_eq!(c.smi_used, 120_114 * 1_048_576);
    let per_rank =
        (14.00 * GIB).round() as i64 + (0.60 * GIB).round() as i64 - (0.01 * GIB).round() as i64;
    assert_eq!(c.taken, 8 * per_rank);
    assert!((c.at_s.get() - 11.115).abs() < 0.01, "{:?}", c.at_s);
    assert_eq!(c.before, Some(0));
    let mib = c.difference() as f64 / 1_048_576.0;
    assert!((mib - 592.72).abs() < 0.01, "{mib}");
    assert!(c.finished && c.process.is_none());
}

/// `rankscope ARGS… --json`, parsed.
fn json_of(args: &[&str]) -> serde_json::Value {
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .expect("binary built")
        .args(args)
        .arg("--json")
        .output()
        .expect("runs");
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn memory(bytes: i64, resolution_bytes: u64) -> serde_json::Value {
    serde_json::json!({"bytes": bytes, "resolution_bytes": resolution_bytes})
}

/// Issue 31's snapshot split in the JSON (`memory.allocator_split`), TP0 of tp8-baseline,
/// checked against its pickle and server.log. The pickle (read with Python's `pickle`)
/// holds 158 segments, 15,021,899,776 bytes: 123 whose own stack or whose blocks' stacks
/// start in `load_weights` (2,187,329,536 + 5,756,682,240 = 7,944,011,776), 2 of
/// `kv_cache` (2 × 3,202,351,104 = 6,404,702,208), 32 of `capture_graphs` and one small
/// one of `capture_begin` (671,088,640 + 2,097,152 = 673,185,792). The log's figures:
/// weights 14.00 − 6.60 GB (lines 20, 26) = 7.40 GiB = 7,945,689,498 bytes; KV pool K + V
/// 2.98 + 2.98 GB (line 49) = 2 × 3,199,750,636 = 6,399,501,272; graphs 0.64 − 0.01 GB
/// (lines 50, 68) = 687,194,767 − 10,737,418 = 676,457,349; communication 0.60 GB (line
/// 15) = 644,245,094, which the allocator holds none of. Each category read from two
/// printed figures has two print steps of 0.01 GiB (2 × 10,737,418) as its resolution.
#[test]
fn summary_json_splits_the_breakdown_by_the_snapshots() {
    let doc = json_of(&["summary", "samples/tp8-baseline"]);
    let split = &doc["memory"]["allocator_split"];
    assert_eq!(
        split.as_array().map(Vec::len),
        Some(8),
        "one per rank's pickle"
    );
    let tp0 = &split[0];
    assert_eq!(tp0["rank"], "TP0");
    assert_eq!(tp0["path"], "samples/tp8-baseline/snapshot_rank0.pickle");
    assert_eq!(tp0["reserved_bytes"], memory(15_021_899_776, 0));
    assert_eq!(tp0["unplaced_bytes"], memory(0, 0));
    let cat = |name: &str| {
        tp0["categories"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["category"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let two_steps = 2 * 10_737_418;
    let comm = cat("communication");
    assert_eq!(comm["allocator_bytes"], memory(0, 0));
    assert_eq!(comm["residual_bytes"], memory(644_245_094, 10_737_418));
    let weights = cat("weights");
    assert_eq!(weights["allocator_bytes"], memory(7_944_011_776, 0));
    assert_eq!(
        weights["residual_bytes"],
        memory(7_945_689_498 - 7_944_011_776, two_steps)
    );
    assert_eq!(weights["sites"][0]["placed"], "by_stack");
    let kv = cat("kv_pool");
    assert_eq!(kv["allocator_bytes"], memory(6_404_702_208, 0));
    // The pool the log prints is 5,200,936 bytes below what the allocator reserved for
    // it: within ± half of its resolution (10,737,418), so all of it in PyTorch.
    assert_eq!(
        kv["residual_bytes"],
        memory(6_399_501_272 - 6_404_702_208, two_steps)
    );
    let graphs = cat("cuda_graphs");
    assert_eq!(graphs["allocator_bytes"], memory(673_185_792, 0));
    assert_eq!(
        graphs["residual_bytes"],
        memory(676_457_349 - 673_185_792, two_steps)
    );
}

/// Issue 31's nvidia-smi comparison in the JSON (`memory.nvidia_smi`). tp8-baseline: the
/// last rank to print its free figure is TP5 at 09:18:19 (server.log:81), ten seconds
/// after the run's first line (09:18:09); the first sample a second after it is the CSV's
/// 09:18:20.115 row (t+11.115 s), 120,114 MiB = 125,948,657,664 bytes, and the row before
/// the first line (09:18:08.805) says 0 MiB. Each of the 8 ranks took its device (14.00 +
/// 0.60 GB) less its free 0.01 GB = 14.59 GiB: 8 × 15,665,893,212 = 125,327,145,696, with
/// three 0.01 GiB steps per rank (24 × 10,737,418 = 257,698,032).
/// tp8-custom-ar: TP0's OOM message (server.log:98) says its process has 14.66 GiB in use
/// (15,741,055,140); by its figures it took 13.96 + 0.64 − 0.60 GB (lines 33, 30, 51) =
/// 14.00 GiB = 15,032,385,536.
#[test]
fn summary_json_compares_the_breakdown_with_nvidia_smi() {
    let doc = json_of(&["summary", "samples/tp8-baseline"]);
    let smi = &doc["memory"]["nvidia_smi"];
    assert_eq!(smi.as_array().map(Vec::len), Some(1));
    let g = &smi[0];
    assert_eq!(g["source"], "samples/tp8-baseline/nvidia-smi-gpu.csv");
    assert_eq!(g["placement"], "shared");
    assert_eq!(g["ranks"].as_array().map(Vec::len), Some(8));
    assert_eq!(g["at_s"], 11.115);
    let mib = 1 << 20;
    assert_eq!(g["used_bytes"], memory(120_114 * mib, mib as u64));
    assert_eq!(g["before_bytes"], memory(0, mib as u64));
    assert_eq!(g["taken_bytes"], memory(125_327_145_696, 257_698_032));
    assert_eq!(
        g["difference_bytes"],
        memory(125_948_657_664 - 125_327_145_696, 257_698_032 + mib as u64)
    );
    assert_eq!(g["finished"], true);
    assert!(g["process"].is_null());

    let doc = json_of(&["summary", "samples/tp8-custom-ar"]);
    let p = &doc["memory"]["nvidia_smi"][0]["process"];
    assert_eq!(p["rank"], "TP0");
    assert_eq!(p["line"], 98);
    assert_eq!(p["in_use_bytes"], memory(15_741_055_140, 10_737_418));
    assert_eq!(p["taken_bytes"], memory(15_032_385_536, 3 * 10_737_418));
    assert_eq!(
        p["difference_bytes"]["bytes"],
        15_741_055_140i64 - 15_032_385_536
    );
    // The rank stopped in graph capture: its free figure is not the last phase's.
    assert_eq!(doc["memory"]["nvidia_smi"][0]["finished"], false);
}

/// `diff --json` carries each run's split, as summary's, beside the moved category:
/// custom all-reduce's 40 MiB (41,943,040, the `init_custom_ar` site of each candidate
/// pickle) lands in `communication`, whose delta is 0.64 − 0.60 GB = 42,949,673 bytes
/// (687,194,767 − 644,245,094, line 30 of each log), resolution one step per side.
#[test]
fn diff_json_carries_both_splits() {
    let doc = json_of(&["diff", "samples/tp8-baseline", "samples/tp8-custom-ar"]);
    let m = &doc["memory"];
    assert_eq!(
        m["baseline"]["allocator_split"].as_array().map(Vec::len),
        Some(8)
    );
    assert_eq!(
        m["candidate"]["allocator_split"].as_array().map(Vec::len),
        Some(8)
    );
    assert_eq!(m["moved"][0]["category"], "communication");
    assert_eq!(
        m["moved"][0]["delta_bytes"],
        memory(42_949_673, 2 * 10_737_418)
    );
    assert_eq!(
        m["snapshot_split"]["allocator_bytes"],
        memory(41_943_040, 0)
    );
    assert_eq!(
        m["snapshot_split"]["residual_bytes"],
        memory(42_949_673 - 41_943_040, 2 * 10_737_418)
    );
}
