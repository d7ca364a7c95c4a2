//! One test per shape and corruption of ../shared/FORMATS.md, on logs written for this
//! project from those shapes (our own values). Each test states what a careful reader
//! finds in its log and checks that rankscope finds exactly that.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::run_of;

use rankscope::model::notes::{DatesFrom, ReadNote};
use rankscope::model::{FailureKind, Phase, Run};
use rankscope::render::text::notes::read_note;

/// `kind@rank` for every event, in order (`-` for no rank).
fn events(run: &Run) -> Vec<String> {
    run.events
        .iter()
        .map(|e| {
            format!(
                "{}@{}",
                e.kind,
                e.rank.as_ref().map_or("-".to_string(), |r| r.to_string())
            )
        })
        .collect()
}

fn fig(run: &Run, rank: &str, phase: Phase, name: &str) -> Option<f64> {
    run.ranks
        .iter()
        .find(|r| r.rank.to_string() == rank)?
        .figure(phase, name)?
        .value
        .as_f64()
}

#[test]
fn sglang_0_1_gpu_id_and_bare_traceback() {
    let run = run_of(
        "server.log",
        "[gpu_id=0] Set cuda device.\n\
         [gpu_id=1] Set cuda device.\n\
         [gpu_id=0] Init nccl begin.\n\
         [gpu_id=1] Init nccl begin.\n\
         Exception in ModelRpcClient:\n\
         Traceback (most recent call last):\n\
         \x20 File \"/srv/sglang/managers/router/model_rpc.py\", line 71, in exposed_init_model\n\
         \x20   self.model_runner = ModelRunner(\n\
         RuntimeError: CUDA error: out of memory\n",
    );
    assert_eq!(
        events(&run),
        [
            "dist_init_begin@TP0",
            "dist_init_begin@TP1",
            "error@-",
            "oom@-"
        ]
    );
    assert!(run.events[2]
        .detail()
        .is_some_and(|d| d.contains("model_rpc.py")));
    assert_eq!(run.counts().unknown, 0);
}

#[test]
fn sglang_0_3_time_only_stamps_and_bare_lines() {
    let run = run_of("server.log", 
        "[2024-10-12 08:02:40] server_args=ServerArgs(model_path='/m/mistral', tp_size=1)\n\
         WARNING 10-12 08:02:51 rocm.py:13] `fork` method is not supported by ROCm.\n\
         NCCL version 2.20.5+cuda12.4\n\
         [08:03:31 TP0] Load weight begin. avail mem=78.52 GB\n\
         [08:03:47 TP0] Load weight end. type=MistralForCausalLM, dtype=torch.float16, avail mem=63.90 GB\n\
         [08:03:48 TP0] Memory pool end. avail mem=9.14 GB\n\
         [08:03:55 TP0] Capture cuda graph begin. This can take up to several minutes.\n\
         max_total_num_tokens=412288\n\
         Failed: Cuda error /build/csrc/custom_all_reduce.cuh:311 'peer access is not supported between these two devices'\n",
    );
    assert_eq!(
        events(&run),
        [
            "server_args@-",
            // `WARNING 10-12 08:02:51 rocm.py:13] …`: a vendored vLLM WARNING-level line.
            "warning@-",
            // The one rank's untagged phase and failure lines are its own (a one-rank
            // run adopts them), and are listed so; launch and warning lines stay no one's.
            "nccl_version@TP0",
            "weight_load_begin@TP0",
            "weight_load_end@TP0",
            "mem_pool_end@TP0",
            "cuda_graph_begin@TP0",
            "kv_budget@TP0",
            "error@TP0",
        ]
    );
    // The time-only stamps take the date of the run's dated line.
    let wl = run
        .events
        .iter()
        .find(|e| e.kind == "weight_load_end")
        .expect("event");
    assert_eq!(
        wl.ts.map(|t| t.to_string()).as_deref(),
        Some("2024-10-12 08:03:47")
    );
    assert!(wl.year_inferred);
    assert_eq!(run.counts().unknown, 0);
}

#[test]
fn sglang_0_4_full_start_up_with_swapped_graph_fields() {
    let run = run_of("server.log", 
        "INFO 04-10 08:14:47 __init__.py:188] Automatically detected platform cuda.\n\
         [2025-04-11 08:14:50] server_args=ServerArgs(model_path='/m/orca', tp_size=2)\n\
         [2025-04-11 08:14:55 TP1] Init torch distributed begin.\n\
         [2025-04-11 08:14:56 TP1] sglang is using nccl==2.23.4\n\
         [2025-04-11 08:14:57 TP1] Init torch distributed ends. mem usage=0.21 GB\n\
         [2025-04-11 08:14:57 TP1] Load weight begin. avail mem=43.18 GB\n\
         [2025-04-11 08:15:09 TP1] Load weight end. type=MistralForCausalLM, dtype=torch.bfloat16, avail mem=29.77 GB, mem usage=13.41 GB.\n\
         [2025-04-11 08:15:10 TP1] KV Cache is allocated. #tokens: 301544, K size: 11.50 GB, V size: 11.50 GB\n\
         [2025-04-11 08:15:10 TP1] Memory pool end. avail mem=5.92 GB\n\
         [2025-04-11 08:15:10 TP1] Capture cuda graph begin. This can take up to several minutes. avail mem=5.31 GB\n\
         Capturing batches (avail_mem=4.60 GB): 100%|##########| 23/23 [00:09<00:00,  2.41it/s]\n\
         [2025-04-11 08:15:19 TP1] Capture cuda graph end. Time elapsed: 8.64 s. avail mem=4.48 GB. mem usage=0.83 GB.\n\
         [2025-04-11 08:15:20 TP1] max_total_num_tokens=301544, chunked_prefill_size=4096, max_prefill_tokens=8192, max_running_requests=1025, context_len=32768\n\
         [2025-04-11 08:15:20] INFO:     Uvicorn running on http://127.0.0.1:31000 (Press CTRL+C to quit)\n\
         [2025-04-11 08:15:24] The server is fired up and ready to roll!\n",
    );
    let r = &run.ranks[0];
    assert_eq!(r.rank.to_string(), "TP1");
    assert!(r.reached_ready);
    // 0.21 GB, 13.41 GB, 11.50 + 11.50 GB, 0.83 GB (graph end, swapped field order)
    assert_eq!(
        fig(&run, "TP1", Phase::DistInit, "mem_usage"),
        Some(225_485_783.0)
    );
    assert_eq!(
        fig(&run, "TP1", Phase::WeightLoad, "mem_usage"),
        Some(14_398_877_860.0)
    );
    assert_eq!(
        fig(&run, "TP1", Phase::KvCache, "kv_size"),
        Some(24_696_061_952.0)
    );
    assert_eq!(
        fig(&run, "TP1", Phase::CudaGraph, "mem_usage"),
        Some(891_205_714.0)
    );
    assert_eq!(fig(&run, "TP1", Phase::KvCache, "tokens"), Some(301_544.0));
    let c = run.counts();
    // The bar, and two records that give no event but hold a `[[noise]]` literal: vLLM's
    // `Automatically detected platform` (line 1) and uvicorn's `INFO:     Uvicorn running
    // on` (line 14).
    assert_eq!(
        (c.unknown, c.noise),
        (0, 3),
        "the bar and two noise records"
    );
}

#[test]
fn sglang_0_4_6_world_size_lines_and_negative_profiled_budget() {
    let run = run_of("server.log", 
        "[2025-07-02 19:31:04 TP5] world_size=16 rank=13 local_rank=5 distributed_init_method=tcp://10.20.0.4:5000 backend=nccl\n\
         [2025-07-02 19:31:05 TP0] Found nccl from library libnccl.so.2\n\
         [2025-07-02 19:31:44 DP3 TP3] max_total_tokens=65536 is larger than the profiled value -120455. Use the profiled value instead.\n",
    );
    assert_eq!(
        events(&run),
        [
            "dist_init_begin@TP5",
            "nccl_version@TP0",
            "kv_budget@DP3 TP3"
        ]
    );
    // A negative budget is a diagnosis, kept as it was printed.
    assert_eq!(
        fig(&run, "DP3 TP3", Phase::KvCache, "tokens"),
        Some(-120_455.0)
    );
}

#[test]
fn sglang_0_5_tags_two_digit_ranks_and_kv_variants() {
    let run = run_of("server.log", 
        "[2026-03-09 22:10:59 TP11] KV Cache is allocated. #tokens: 912384, KV size: 59.80 GB\n\
         [2026-03-09 22:10:59 TP9] KV Cache is allocated. #tokens: 912384, KV size: 59.80 GB\n\
         [2026-03-09 22:10:59 TP10] KV Cache is allocated. #tokens: 912384, KV size: 59.80 GB\n\
         [2026-06-21 04:02:17 DP1 TP1 EP1] KV Cache is allocated. dtype: torch.float16, #tokens: 204800, K size: 6.25 GB, V size: 6.25 GB\n\
         [2025-11-30 05:00:00] KV Cache is allocated. #tokens: 5000, K size: 0.10 GB, V size: 0.10 GB\n",
    );
    let order: Vec<String> = run.ranks.iter().map(|r| r.rank.to_string()).collect();
    // Ranks sort by tag in DP, PP, …, TP, EP order, numbers numerically (TP10 after
    // TP9); the untagged single-GPU line has no rank.
    assert_eq!(order, ["DP1 TP1 EP1", "TP9", "TP10", "TP11"]);
    assert_eq!(run.events.iter().filter(|e| e.rank.is_none()).count(), 1);
}

#[test]
fn vllm_v0_memory_profiling_forms() {
    let run = run_of("server.log", 
        "(VllmWorkerProcess pid=61402) INFO 04-02 10:31:07 [worker.py:269] Memory profiling takes 21.09 seconds\n\
         (VllmWorkerProcess pid=61402) INFO 04-02 10:31:07 [worker.py:269] the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB\n\
         (VllmWorkerProcess pid=61402) INFO 04-02 10:31:07 [worker.py:273] model weights take 14.02GiB; non_torch_memory takes 0.31GiB; PyTorch activation peak memory takes 1.12GiB; the rest of the memory reserved for KV Cache is 55.82GiB.\n\
         INFO 12-19 06:10:00 worker.py:232] Memory profiling results:\n\
         INFO 12-19 06:10:00 worker.py:232] total_gpu_memory                 79.19GiB\n\
         INFO 12-19 06:10:00 worker.py:232] available_kv_cache_memory        52.40GiB\n\
         INFO 05-17 13:03:40 gpu_executor.py:122] # GPU blocks: 9120, # CPU blocks: 4096\n",
    );
    // A V0 driver (no prefix) beside one worker process that never names its rank: the
    // driver is rank 0 in V0, so the one worker is rank 1.
    assert_eq!(
        events(&run),
        [
            "kv_budget@TP1",
            "kv_budget@TP1",
            "kv_budget@TP1",
            "kv_budget@TP0",
            "kv_cache_alloc@TP0"
        ]
    );
    // 55.82 GiB, the worker's own KV remainder.
    assert_eq!(
        fig(&run, "TP1", Phase::KvCache, "kv_avail"),
        Some(59_936_268_616.0)
    );
}

#[test]
fn vllm_v1_worker_names_ranks_by_pid_and_nccl_lines_join_them() {
    let run = run_of("server.log", 
        "(VllmWorker rank=2 pid=7342) INFO 06-22 09:12:05 [parallel_state.py:1004] rank 2 in world size 4 is assigned as DP rank 0, PP rank 0, TP rank 2\n\
         gpu-node-07:7342:7400 [2] NCCL INFO comm 0x55d1a2b3c4e0 rank 2 nranks 4 cudaDev 2 nvmlDev 6 busId c1000 commId 0x1a2b3c4d5e6f7a8b - Init COMPLETE\n\
         gpu-node-07:7342:7342 [2] NCCL INFO Using network IB\n\
         (VllmWorker TP1 pid=80211) INFO 08-30 11:41:18 [pynccl.py:72] vLLM is using nccl==2.27.3\n\
         INFO 06-22 09:14:40 [kv_cache_utils.py:634] GPU KV cache size: 1,204,336 tokens\n",
    );
    assert_eq!(
        events(&run),
        [
            "rank_assign@TP2",
            "nccl_comm_init@TP2",
            "kv_cache_alloc@engine",
            "nccl_version@TP1"
        ]
    );
    assert_eq!(
        fig(&run, "engine", Phase::KvCache, "tokens"),
        Some(1_204_336.0)
    );
    assert_eq!(run.counts().noise, 1, "NCCL INFO chatter is known noise");
}

#[test]
fn vllm_prefixed_traceback_is_one_record_with_its_oom() {
    let run = run_of("server.log", 
        "(Worker_TP3 pid=7781) INFO 02-10 12:00:20 [gpu_model_runner.py:2653] Model loading took 30.10 GiB memory and 40.000000 seconds\n\
         (Worker_TP3 pid=7781) ERROR 02-10 12:00:31 [multiproc_executor.py:643] WorkerProc failed to start.\n\
         (Worker_TP3 pid=7781) ERROR 02-10 12:00:31 [multiproc_executor.py:643] Traceback (most recent call last):\n\
         (Worker_TP3 pid=7781) ERROR 02-10 12:00:31 [multiproc_executor.py:643]   File \"/srv/py/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py\", line 240, in determine_available_memory\n\
         (Worker_TP3 pid=7781) ERROR 02-10 12:00:31 [multiproc_executor.py:643]                          ^^^^^^^^^^^^^^^^^^^^^^^^^^\n\
         (Worker_TP3 pid=7781) ERROR 02-10 12:00:31 [multiproc_executor.py:643] \n\
         (Worker_TP3 pid=7781) ERROR 02-10 12:00:31 [multiproc_executor.py:643] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.20 GiB is free.\n\
         (Worker_TP2 pid=7780) WARNING 02-10 12:00:32 [multiproc_executor.py:519] WorkerProc was terminated\n",
    );
    assert_eq!(
        events(&run),
        [
            "weight_load_end@TP3",
            "error@TP3",
            "oom@TP3",
            "teardown@TP2"
        ]
    );
    let tp3 = run
        .ranks
        .iter()
        .find(|r| r.rank.to_string() == "TP3")
        .expect("TP3");
    let f = tp3.failure.as_ref().expect("failed");
    assert_eq!(f.kind, FailureKind::Oom);
    // The frames name determine_available_memory: the KV budget was being sized.
    assert_eq!(f.phase, Phase::KvCache);
    let c = run.counts();
    // Traceback, File, caret and the empty prefixed line; the OOM line is an event.
    assert_eq!((c.continuation, c.unknown), (4, 0));
}

#[test]
fn wrappers_are_peeled() {
    let run = run_of("server.log", 
        "llm-api-1  | (VllmWorker rank=1 pid=88) INFO 05-02 14:11:09 [loader.py:458] Loading weights took 212.40 seconds\n\
         2026-01-07T09:31:55.102938471Z (Worker_TP1 pid=213) INFO 01-07 09:31:55 [parallel_state.py:1251] world_size=2 rank=1 local_rank=1 distributed_init_method=tcp://127.0.0.1:40311 backend=nccl\n\
         2025-05-19 07:02:11,884 - __main__ - INFO - [2025-05-19 07:02:11 TP0] Load weight begin. avail mem=38.90 GB\n\
         > [2025-05-19 07:02:12 TP0] Memory pool end. avail mem=3.10 GB\n\
         │ INFO 04-02 10:31:07 [worker.py:273] Memory profiling takes 21.09 seconds                                 │\n\
         (RayWorkerWrapper pid=5512, ip=10.1.4.22) WARNING 06-01 10:02:44 custom_all_reduce.py:131] Custom allreduce is disabled because your platform lacks GPU P2P capability. [repeated 3x across cluster]\n\
         web-7  | 2024-09-02 08:40:12 | ERROR | stderr |   File \"/usr/lib/python3.11/runpy.py\", line 198, in _run_module_as_main\n",
    );
    assert_eq!(
        events(&run),
        // In time order: the yearless stamps take 2025 from the dated SGLang lines.
        [
            "dist_init_begin@TP1",
            "kv_budget@engine",
            "weight_load_end@TP1",
            "weight_load_begin@TP0",
            "mem_pool_end@TP0",
            "custom_allreduce@pid5512"
        ]
    );
    let ar = run
        .events
        .iter()
        .find(|e| e.kind == "custom_allreduce")
        .expect("event");
    assert_eq!(
        ar.field("reason").and_then(|v| v.as_text()),
        Some("your platform lacks GPU P2P capability")
    );
}

#[test]
fn yearless_stamps_roll_over_into_the_new_year() {
    let run = run_of("server.log", 
        "[2025-12-31 23:59:58] server_args=ServerArgs(model_path='/m/x', tp_size=1)\n\
         (Worker_TP0 pid=10) INFO 12-31 23:59:59 [parallel_state.py:1251] world_size=1 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:1 backend=nccl\n\
         (Worker_TP0 pid=10) INFO 01-01 00:00:41 [default_loader.py:267] Loading weights took 40.00 seconds\n",
    );
    let ts: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| e.ts.map(|t| t.to_string()))
        .collect();
    assert_eq!(
        ts,
        [
            "2025-12-31 23:59:58",
            "2025-12-31 23:59:59",
            "2026-01-01 00:00:41"
        ]
    );
    assert!(run.notes.contains(&ReadNote::DatesInferred {
        from: DatesFrom::RunLines
    }));
    assert!(run
        .notes
        .iter()
        .map(read_note)
        .any(|n| n.contains("inferred from the fully dated lines")));
}

#[test]
fn mixed_streams_are_counted_not_lost() {
    let run = run_of("server.log", 
        "[2026-02-01 10:00:00 TP0] Init torch distributed begin.\n\
         2025-05-19 07:02:11,884 - INFO - flashinfer.jit: Loading JIT ops: sampling\n\
         [Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1\n\
         [aiter] import [module_aiter_enum] under /opt/aiter\n\
         [rank0]:[W305 23:58:40.004915662 CudaIPCTypes.cpp:22] Producer process has been terminated before all shared CUDA tensors released.\n\
         frame #3: c10d::TCPStore::doWait(c10::ArrayRef<std::string>, std::chrono::milliseconds) + 0x2b1 (0x7f3a11c2e4d1 in /opt/venv/lib/libtorch_cpu.so)\n\
         /opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:61: FutureWarning: The pynvml package is deprecated.\n\
         \x20 import pynvml  # type: ignore[import]\n\
         INFO:     Started server process [4100]\n\
         | NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |\n\
         user@gpu-node:~$ python -m sglang.launch_server --model /m/x\n\
         **9.04 s** as measured by hand\n",
    );
    // The c10 `[W…]` line and the Python `FutureWarning` line are warnings. c10's `[rank0]`
    // is a global rank, which in a run of TP ranks alone is TP0; the Python warning has no
    // prefix at all.
    assert_eq!(
        events(&run),
        ["dist_init_begin@TP0", "warning@TP0", "warning@-"]
    );
    let c = run.counts();
    // Known: flashinfer, Gloo, aiter, the C++ frame, uvicorn and nvidia-smi are noise; the
    // warning's source line is a continuation. Not understood: the shell prompt and the
    // hand-written note. (The c10 line and the warning are events, not records or noise.)
    assert_eq!(
        (c.records, c.noise, c.continuation, c.unknown),
        (0, 6, 1, 2)
    );
}

#[test]
fn prefix_only_records_and_truncated_prefix() {
    let run = run_of("server.log", 
        "(Worker_PP0 pid=311) \n\
         (EngineCore pid=298)    \n\
         (Worker_TP0 pid=310) INFO 04-19 08:55:33 [gpu_worker.py:455] Available KV cache memory: 31.07 GiB\n\
         [2026-0",
    );
    assert_eq!(events(&run), ["kv_budget@TP0"]);
    let src = &run.sources[0];
    assert_eq!(src.cut_last_line.as_deref(), Some("[2026-0"));
}

#[test]
fn flattened_log_on_one_line() {
    let run = run_of("server.log", 
        "[2026-02-01 10:00:00 TP0] Init torch distributed begin. \u{23ce} [2026-02-01 10:00:02 TP0] Init torch distributed ends. elapsed=2.00 s, mem usage=1.10 GB \u{23ce} [2026-02-01 10:00:02 TP0] Load weight begin. avail mem=70.00 GB\n",
    );
    assert_eq!(
        events(&run),
        [
            "dist_init_begin@TP0",
            "dist_init_end@TP0",
            "weight_load_begin@TP0"
        ]
    );
}

#[test]
fn newest_first_logs_are_said_so_not_silently_resorted() {
    let run = run_of(
        "server.log",
        "[2026-01-01 10:05:00 TP0] Memory pool end. avail mem=1.00 GB\n\
         [2026-01-01 10:00:00 TP0] Load weight begin. avail mem=9.00 GB\n",
    );
    assert_eq!(events(&run), ["weight_load_begin@TP0", "mem_pool_end@TP0"]);
    // One step back: 10:05 then 10:00.
    assert!(run.notes.iter().any(|n| matches!(n,
        ReadNote::TimeGoesBack { path, times: 1 } if path.ends_with("/server.log"))));
    assert!(run
        .notes
        .iter()
        .map(read_note)
        .any(|n| n.contains("time stamps go backwards by more than a minute 1 time(s)")));
}

#[test]
fn a_vllm_worker_renamed_during_start_up_is_one_rank() {
    // vLLM names a worker `(Worker pid=P)` before it knows its rank and `(Worker_TP1
    // pid=P)` after: the pid ties them.
    let run = run_of("server.log", 
        "(Worker pid=77) INFO 02-01 10:00:01 [gpu_model_runner.py:2602] Starting to load model /m/x...\n\
         (Worker_TP1 pid=77) INFO 02-01 10:00:30 [gpu_model_runner.py:2653] Model loading took 7.00 GiB memory and 29.000000 seconds\n\
         (EngineCore pid=70) ERROR 02-01 10:00:31 [core.py:700] ValueError: Free memory on device cuda:0 (12.18/23.56 GiB) on startup is less than desired GPU memory utilization (0.92, 21.67 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n",
    );
    assert_eq!(
        events(&run),
        [
            "weight_load_begin@TP1",
            "weight_load_end@TP1",
            "error@engine"
        ]
    );
    let engine = run
        .ranks
        .iter()
        .find(|r| r.rank.is_engine())
        .expect("engine row");
    let f = engine.failure.as_ref().expect("failed");
    assert_eq!(f.kind, FailureKind::NotEnoughMemory);
    // 12.18 GiB free of 23.56 GiB, 21.67 GiB wanted.
    assert_eq!(
        f.fields.get("free_bytes").and_then(|v| v.as_bytes()),
        Some(13_078_175_416)
    );
}

#[test]
fn c10_warning_message_starts_after_its_prefix() {
    // FORMATS.md: `[rank<r>]:[W<M><DD> HH:MM:SS.<ns9> <File>.cpp:<n>] <msg>`. The event's
    // literal (`]:[W`) lies inside the prefix, so its regex starts there; the message
    // shown is what follows the prefix's `] `, the rank is the `[rank3]` tag.
    let run = run_of(
        "stdout.txt",
        "[2026-11-30 07:05:01 TP3] Init torch distributed begin.\n\
         [rank3]:[W1130 07:05:09.120045113 Store.cpp:88] pool of 4 tensors still held at exit\n",
    );
    let w = run
        .events
        .iter()
        .find(|e| e.kind == "warning")
        .expect("the c10 line is a warning event");
    assert_eq!(&*w.message, "pool of 4 tensors still held at exit");
    assert_eq!(
        w.rank.as_ref().map(|r| r.to_string()).as_deref(),
        Some("TP3")
    );
}

#[test]
fn serving_traffic_is_known_noise_in_every_wording() {
    // SGLang's scheduler lines in the wordings of 0.1–0.4 (`Decode batch. `, the trailing
    // `, ` of one version's prefill line), of later versions (`Decode batch, `) and of 2025
    // on (`Decode batch [forward count], `); vLLM V0's stat line and V1's behind
    // `Engine 000: `, the request log's `Received request`, V0's `Added request` and
    // `Finished request`. One SGLang record that holds none of them.
    let run = run_of("server.log",
        "[2026-03-04 10:11:00 TP0] Load weight begin. avail mem=70.10 GB\n\
         [2026-03-04 10:11:30 TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, cache hit rate: 0.00%, token usage: 0.00, #running-req: 0, #queue-req: 0, \n\
         [2026-03-04 10:11:31 TP0] Decode batch. #running-req: 1, #token: 40, token usage: 0.00, gen throughput (token/s): 3.21, #queue-req: 0\n\
         [2026-03-04 10:11:32 DP0 TP0 EP0] Prefill batch, #new-seq: 2, #new-token: 512, #cached-token: 64, token usage: 0.01, #running-req: 1, #queue-req: 0\n\
         [2026-03-04 10:11:33 DP0 TP0 EP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.02, cuda graph: True, gen throughput (token/s): 88.10, #queue-req: 0\n\
         [2026-03-04 10:11:34 TP0] Decode batch [4077], #running-req: 5, #token: 1500, token usage: 0.03, cuda graph: True, gen throughput (token/s): 201.55, #queue-req: 0,\n\
         INFO 03-04 10:11:35 metrics.py:351] Avg prompt throughput: 10.2 tokens/s, Avg generation throughput: 31.0 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.3%, CPU KV cache usage: 0.0%.\n\
         (APIServer pid=4120) INFO 03-04 10:11:36 [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 12.5 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.2%, Prefix cache hit rate: 0.0%\n\
         INFO 03-04 10:11:37 [logger.py:41] Received request cmpl-77aa: prompt: 'Hi there', params: SamplingParams(n=1, temperature=0.0, max_tokens=8), prompt_token_ids: None, lora_request: None.\n\
         INFO 03-04 10:11:37 async_llm_engine.py:208] Added request cmpl-77aa.\n\
         INFO 03-04 10:11:38 async_llm_engine.py:176] Finished request cmpl-77aa.\n\
         [2026-03-04 10:11:39 TP0] Cache flushed successfully!\n",
    );
    assert_eq!(events(&run), ["weight_load_begin@TP0"]);
    let c = run.counts();
    // Lines 2–11 are traffic; line 12 is an SGLang record with nothing to report.
    assert_eq!(
        (c.events, c.noise, c.records, c.unknown),
        (1, 10, 1, 0),
        "traffic is noise, not other records"
    );
}

#[test]
fn a_request_line_that_quotes_an_error_is_traffic_not_that_error() {
    // vLLM's request log quotes the prompt (`Received request …: prompt: '…'`), SGLang's
    // (`--log-requests`) the request (`Receive: obj=…`) and its answer (`Finish: obj=…,
    // out=…`): a user who asks about an OOM puts its words there. Each such line begins
    // with its traffic wording, before any event's; the last line is a failure whose own
    // wording comes first, and is read as one (its OOM, `Capture cuda graph failed:`).
    let run = run_of("server.log",
        "[2026-03-04 10:11:00 TP0] Load weight begin. avail mem=70.10 GB\n\
         INFO 03-04 10:11:37 [logger.py:41] Received request cmpl-77aa: prompt: 'why torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.00 GiB is free', params: SamplingParams(n=1), prompt_token_ids: None, lora_request: None.\n\
         [2026-03-04 10:11:38] Receive: obj=GenerateReqInput(text='NCCL error: unhandled system error, Load weight begin. avail mem=1.00 GB', sampling_params={'max_new_tokens': 8})\n\
         [2026-03-04 10:11:39] Finish: obj=GenerateReqInput(text='x'), out={'text': 'KV Cache is allocated. #tokens: 5, K size: 1.00 GB, V size: 1.00 GB'}\n\
         [2026-03-04 10:11:41 TP0] Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB. Prefill batch was running\n",
    );
    assert_eq!(events(&run), ["weight_load_begin@TP0", "oom@TP0"]);
    let oom = &run.events[1];
    assert_eq!(oom.origin.line, 5);
    let c = run.counts();
    assert_eq!((c.events, c.noise, c.records, c.unknown), (2, 3, 0, 0));
}
