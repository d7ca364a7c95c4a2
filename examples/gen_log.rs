//! Writes a large synthetic SGLang log for benchmarks: a TP8 start-up (every event kind the
//! grammar knows, with an OOM traceback near the end) among millions of decode/prefill and
//! HTTP lines, which is what a production log around a start-up looks like.
//!
//! cargo run --release --example gen_log -- OUT SIZE_MIB

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args.next().unwrap_or_else(|| "bench-data/large.log".into());
    let mib: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1024);
    if let Some(dir) = std::path::Path::new(&out).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&out)?);
    let target = mib << 20;
    let mut written = 0u64;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut line = String::with_capacity(256);
    let emit =
        |w: &mut BufWriter<std::fs::File>, s: &str, written: &mut u64| -> std::io::Result<()> {
            w.write_all(s.as_bytes())?;
            w.write_all(b"\n")?;
            *written += s.len() as u64 + 1;
            Ok(())
        };
    emit(&mut w, "[2026-11-29 09:18:09] server_args=ServerArgs(model_path='synthetic-61L', tp_size=8, pp_size=1, mem_fraction_static=0.9, enable_custom_allreduce=False)", &mut written)?;
    for tp in 0..8 {
        for l in [
            format!("[2026-11-29 09:18:12 TP{tp}] Init torch distributed begin."),
            format!("[2026-11-29 09:18:14 TP{tp}] Init torch distributed ends. elapsed=1.39 s, mem usage=0.60 GB"),
            format!("[2026-11-29 09:18:14 TP{tp}] Load weight begin. avail mem=14.00 GB"),
            format!("[2026-11-29 09:18:18 TP{tp}] Load weight end. elapsed=4.06 s, type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=6.60 GB, mem usage=7.29 GB."),
            format!("[2026-11-29 09:18:18 TP{tp}] max_total_num_tokens=91141, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=262144, available_gpu_mem=6.60 GB"),
            format!("[2026-11-29 09:18:18 TP{tp}] KV Cache is allocated. #tokens: 91141, K size: 2.98 GB, V size: 2.98 GB"),
            format!("[2026-11-29 09:18:18 TP{tp}] Memory pool end. avail mem=0.64 GB"),
            format!("[2026-11-29 09:18:18 TP{tp}] Capture cuda graph begin. This can take up to several minutes. avail mem=0.64 GB"),
            format!("[2026-11-29 09:18:18 TP{tp}] Capture cuda graph end. Time elapsed: 0.02 s. mem usage=0.63 GB. avail mem=0.01 GB."),
        ] {
            emit(&mut w, &l, &mut written)?;
        }
    }
    emit(
        &mut w,
        "[2026-11-29 09:18:19 TP0] The server is fired up and ready to roll!",
        &mut written,
    )?;
    let mut second = 0u64;
    let mut n = 0u64;
    while written < target {
        n += 1;
        if n.is_multiple_of(64) {
            second += 1;
        }
        let (h, m, s) = (9 + (second / 3600) % 14, (second / 60) % 60, second % 60);
        let tp = next() % 8;
        line.clear();
        use std::fmt::Write as _;
        let r = next();
        let _ = match r % 10 {
            0..=6 => write!(
                line,
                "[2026-11-29 {h:02}:{m:02}:{s:02} TP{tp}] Decode batch. #running-req: {}, #token: {}, token usage: 0.{:02}, cuda graph: True, gen throughput (token/s): {}.{:02}, #queue-req: {}",
                r % 256, (r >> 8) % 90_000, (r >> 24) % 100, (r >> 32) % 9000, (r >> 40) % 100, (r >> 48) % 16
            ),
            7 | 8 => write!(
                line,
                "[2026-11-29 {h:02}:{m:02}:{s:02} TP{tp}] Prefill batch. #new-seq: {}, #new-token: {}, #cached-token: {}, token usage: 0.{:02}, #running-req: {}, #queue-req: {}",
                r % 8 + 1, (r >> 8) % 8192, (r >> 24) % 4096, (r >> 32) % 100, (r >> 40) % 256, (r >> 48) % 16
            ),
            _ => write!(
                line,
                "[2026-11-29 {h:02}:{m:02}:{s:02}] INFO:     127.0.0.1:{} - \"POST /generate HTTP/1.1\" 200 OK",
                30000 + r % 30000
            ),
        };
        emit(&mut w, &line, &mut written)?;
    }
    // A late failure, so a scan that stops early would miss it.
    emit(
        &mut w,
        "[2026-11-29 23:59:58 TP3] Scheduler hit an exception: Traceback (most recent call last):",
        &mut written,
    )?;
    emit(
        &mut w,
        "  File \"/srv/sglang/managers/scheduler.py\", line 2101, in run_batch",
        &mut written,
    )?;
    emit(&mut w, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity of 139.80 GiB of which 1.02 GiB is free.", &mut written)?;
    w.flush()?;
    eprintln!("wrote {out}: {written} bytes");
    Ok(())
}
