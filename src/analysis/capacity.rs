//! What a run's KV pool buys: its size in tokens (or pages × page size), the bytes one
//! token takes (from the log, or from the model's `config.json`: layers, KV heads of this
//! rank, head dim, element size), and how many requests of given lengths fit at once,
//! with the server's own cap on running requests applied. The server's sizing rule
//! (`[memory_model.pool]`) is checked against the pool the log shows. With a baseline,
//! what the candidate's changes cost in tokens and requests.

use crate::analysis::breakdown::{evaluate, model_of, rank_breakdown, Amount, Reader, RowValue};
use crate::base::event::{Origin, Rank};
use crate::grammar::memory_model::{Category, MemoryModel};
use crate::model::config::pyrepr::PyValue;
use crate::model::{RankRun, Run};

/// How close a model's bytes per token must be to the log's to match, at least.
pub(crate) const MATCH_FRACTION: f64 = 0.001;

/// Request lengths used when none are given.
pub(crate) const DEFAULT_LENGTHS: [i64; 2] = [4096, 8192];

/// The shape of a model's KV cache, from its `config.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelShape {
    pub(crate) layers: i64,
    pub(crate) kv_heads: i64,
    pub(crate) head_dim: i64,
    /// The weights' dtype as the file names it, and its element size.
    pub(crate) dtype: String,
    pub(crate) dtype_bytes: i64,
    /// Multi-head latent attention: (kv_lora_rank, qk_rope_head_dim). One latent per
    /// token, no separate K and V, the same on every tensor-parallel rank.
    pub(crate) mla: Option<(i64, i64)>,
}

/// Why a model's config.json gave no model shape.
#[derive(Debug, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "the #[error] texts say what each variant and field is"
)]
pub enum ModelConfigError {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("`{0}` is missing or not a positive whole number")]
    Missing(&'static str),
    #[error("dtype `{0}` has no known element size")]
    Dtype(String),
}

/// Element size of a dtype name as config files and servers spell it.
pub(crate) fn dtype_bytes(name: &str) -> Option<i64> {
    let n = name.trim_start_matches("torch.").to_ascii_lowercase();
    Some(match n.as_str() {
        "float32" | "fp32" | "float" => 4,
        "bfloat16" | "bf16" | "float16" | "fp16" | "half" => 2,
        s if s.starts_with("fp8") || s.starts_with("float8") || s == "int8" => 1,
        _ => return None,
    })
}

impl ModelShape {
    /// Reads the fields servers size the cache by. `text_config` (multimodal wrappers)
    /// is read when the top level has no layer count.
    pub fn from_json(text: &str) -> Result<ModelShape, ModelConfigError> {
        let v: serde_json::Value = serde_json::from_str(text)?;
        let v = match v.get("num_hidden_layers") {
            None => v.get("text_config").cloned().unwrap_or(v),
            Some(_) => v,
        };
        let int = |k: &str| v.get(k).and_then(|x| x.as_i64()).filter(|&n| n > 0);
        let layers =
            int("num_hidden_layers").ok_or(ModelConfigError::Missing("num_hidden_layers"))?;
        let heads = int("num_attention_heads");
        let kv_heads = int("num_key_value_heads")
            .or(heads)
            .ok_or(ModelConfigError::Missing("num_key_value_heads"))?;
        let head_dim = int("head_dim")
            .or_else(|| Some(int("hidden_size")? / heads?))
            .filter(|&d| d > 0)
            .ok_or(ModelConfigError::Missing("head_dim"))?;
        let dtype = (v.get("torch_dtype").or_else(|| v.get("dtype")))
            .and_then(|x| x.as_str())
            .unwrap_or("bfloat16")
            .to_string();
        let dtype_bytes =
            dtype_bytes(&dtype).ok_or_else(|| ModelConfigError::Dtype(dtype.clone()))?;
        let mla = int("kv_lora_rank").map(|r| (r, int("qk_rope_head_dim").unwrap_or(0)));
        Ok(ModelShape {
            layers,
            kv_heads,
            head_dim,
            dtype,
            dtype_bytes,
            mla,
        })
    }
}

/// Bytes per token of one rank's pool, from the model's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelKv {
    /// Bytes of KV cache one token takes on one rank.
    pub per_token: i64,
    pub(crate) layers: i64,
    /// Per head (MLA: the latent, kv_lora_rank + qk_rope_head_dim, with no separate V).
    pub(crate) head_dim: i64,
    pub(crate) mla: bool,
    pub(crate) tp: i64,
    /// KV heads each rank holds (at least one: with fewer KV heads than ranks, each head
    /// is held by `replication` ranks).
    pub heads_per_rank: i64,
    /// Ranks holding each KV head (1 unless there are fewer KV heads than ranks).
    pub replication: i64,
    /// The element size used, and whether it is the server's `kv_cache_dtype` rather
    /// than the model's dtype.
    pub(crate) elem_bytes: i64,
    pub(crate) kv_dtype: Option<String>,
}

/// Bytes per token of one rank's pool for a model `shape` split over `tp` ranks, in
/// `kv_dtype` when the server names one.
pub fn model_kv(shape: &ModelShape, tp: i64, kv_dtype: Option<&str>) -> ModelKv {
    let tp = tp.max(1);
    let elem = kv_dtype.and_then(dtype_bytes);
    let elem_bytes = elem.unwrap_or(shape.dtype_bytes);
    let kv_dtype = elem.and(kv_dtype.map(str::to_string));
    if let Some((rank, rope)) = shape.mla {
        return ModelKv {
            per_token: (rank + rope) * shape.layers * elem_bytes,
            layers: shape.layers,
            head_dim: rank + rope,
            mla: true,
            tp,
            heads_per_rank: 1,
            replication: tp,
            elem_bytes,
            kv_dtype,
        };
    }
    let heads_per_rank = (shape.kv_heads / tp).max(1);
    let replication = (tp / shape.kv_heads).max(1);
    ModelKv {
        per_token: heads_per_rank * shape.head_dim * shape.layers * 2 * elem_bytes,
        layers: shape.layers,
        head_dim: shape.head_dim,
        mla: false,
        tp,
        heads_per_rank,
        replication,
        elem_bytes,
        kv_dtype,
    }
}

/// Bytes per token as the log shows it: the pool's memory over its tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct LogPerToken {
    /// Bytes per token: the pool's bytes over its tokens.
    pub bytes: f64,
    /// How far it may be off: the memory figure's resolution, plus up to one page of
    /// memory the server left unused when it rounded down to whole pages, over tokens.
    pub tolerance: f64,
    pub(crate) memory: Amount,
}

/// How many requests of one length fit in the pool at once.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestsAt {
    pub(crate) tokens: i64,
    pub(crate) pages_per_request: i64,
    /// Pages ÷ pages per request, as vLLM prints it.
    pub(crate) concurrency: f64,
    /// Whole requests, capped by the server's limit.
    pub requests: i64,
    /// The server's cap on running requests is what limits it.
    pub limited: bool,
}

/// The server's own concurrency line, and ours for the same length.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConcurrency {
    /// The request length the server's line is for, in tokens.
    pub tokens: i64,
    /// The concurrency the server printed.
    pub concurrency: f64,
    /// The line it printed it on.
    pub origin: Origin,
    /// Our concurrency for the same length.
    pub ours: f64,
}

/// `total × fraction − used` against the pool the log shows.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolCheck {
    pub(crate) setting: String,
    pub(crate) fraction: f64,
    /// The fraction is the grammar's default, not a logged value.
    pub(crate) fraction_default: bool,
    pub(crate) total: Amount,
    pub(crate) used: Amount,
    /// The pool in bytes the formula predicts.
    pub predicted: i64,
    /// The KV pool category's bytes.
    pub(crate) logged: i64,
    pub(crate) resolution: i64,
    /// The KV pool category's print steps added.
    pub(crate) logged_step: i64,
}

impl PoolCheck {
    /// Within the figures' resolution and 5 % (the pool's own metadata, page rounding).
    pub fn follows(&self) -> bool {
        (self.predicted - self.logged).abs() <= self.resolution + self.predicted.abs() / 20
    }
}

/// What one run's KV pool buys: tokens, bytes per token, requests at each length.
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    /// The rank read: the one with the smallest pool (the servers size every rank's pool
    /// by the smallest).
    pub(crate) rank: Rank,
    /// The ranks' pools differ in size.
    pub ranks_differ: bool,
    /// The pool's size in tokens.
    pub pool_tokens: i64,
    pub(crate) pool_origin: Option<Origin>,
    /// The pool was printed in pages: this many, times `page_size`.
    pub pool_pages: Option<i64>,
    /// Tokens per page.
    pub page_size: i64,
    /// The page size is the grammar's default, not a logged setting.
    pub page_size_default: bool,
    /// Bytes per token as the log shows it, when it printed the pool's memory.
    pub log_per_token: Option<LogPerToken>,
    /// Bytes per token from the model's shape, when a model config was given.
    pub model_per_token: Option<ModelKv>,
    /// (setting, value) of the cap on running requests.
    pub limit: Option<(String, i64)>,
    /// Requests that fit at each prompt length asked for.
    pub lengths: Vec<RequestsAt>,
    /// The server's own concurrency line, when it printed one.
    pub server_said: Option<ServerConcurrency>,
    /// The pool the memory settings predict, against the pool the log shows.
    pub pool_check: Option<PoolCheck>,
}

impl Capacity {
    /// The model's figure agrees with the log's: within the log's tolerance, or within
    /// `MATCH_FRACTION` of it. The check tells shapes apart (another KV dtype, head count
    /// or replication changes the figure by a factor of 2 or more); closer than 0.1 %
    /// the two differ by bookkeeping the log does not show (alignment, a pool unified
    /// to the smallest worker's), not by shape.
    pub fn model_matches_log(&self) -> Option<bool> {
        let (l, m) = (self.log_per_token.as_ref()?, self.model_per_token.as_ref()?);
        let gap = (l.bytes - m.per_token as f64).abs();
        Some(gap <= l.tolerance || gap <= l.bytes * MATCH_FRACTION)
    }
}

fn config_value<'r>(run: &'r Run, key: &str) -> Option<&'r PyValue> {
    match &run.config {
        Some(Ok(p)) => p.config.get(key),
        _ => None,
    }
}

fn config_int(run: &Run, key: &str) -> Option<i64> {
    match config_value(run, key)? {
        PyValue::Int(i) => Some(*i),
        _ => None,
    }
}

fn config_f64(run: &Run, key: &str) -> Option<f64> {
    match config_value(run, key)? {
        PyValue::Float(f) => Some(*f),
        PyValue::Int(i) => Some(*i as f64),
        _ => None,
    }
}

fn config_str(run: &Run, key: &str) -> Option<String> {
    match config_value(run, key)? {
        PyValue::Str(s) => Some(s.clone()),
        _ => None,
    }
}

/// A limit named `kind.field` (an event field) or a configuration key.
fn limit_value(rd: &Reader, rank: &RankRun, name: &str) -> Option<i64> {
    let run = rd.run;
    match name.split_once('.') {
        Some((kind, field)) => {
            let f =
                crate::grammar::memory_model::parse_formula("", &format!("{kind}.{field}")).ok()?;
            evaluate(rd, rank, &[f], None, None).map(|a| a.bytes)
        }
        None => config_int(run, name),
    }
    .filter(|&v| v > 0)
}

/// A rank's pool: tokens, the line, and the pages when it was printed in pages.
#[derive(Clone)]
struct Pool {
    tokens: i64,
    origin: Option<Origin>,
    pages: Option<i64>,
}

fn pool_of(rd: &Reader, rank: &RankRun, model: &MemoryModel, page: i64) -> Option<Pool> {
    if let Some(a) = evaluate(rd, rank, &model.tokens, None, None) {
        return Some(Pool {
            tokens: a.bytes,
            origin: a.terms.first().and_then(|t| t.origin.clone()),
            pages: None,
        });
    }
    let a = evaluate(rd, rank, &model.blocks, None, None)?;
    Some(Pool {
        tokens: a.bytes * page,
        origin: a.terms.first().and_then(|t| t.origin.clone()),
        pages: Some(a.bytes),
    })
}

fn requests_at(pool_tokens: i64, page: i64, tokens: i64, limit: Option<i64>) -> RequestsAt {
    let pages = pool_tokens / page;
    let per = ((tokens + page - 1) / page).max(1);
    let concurrency = pages as f64 / per as f64;
    let whole = pages / per;
    let requests = limit.map_or(whole, |l| whole.min(l));
    RequestsAt {
        tokens,
        pages_per_request: per,
        concurrency,
        requests,
        limited: requests < whole,
    }
}

pub(crate) fn pool_check(rd: &Reader, rank: &RankRun, model: &MemoryModel) -> Option<PoolCheck> {
    let run = rd.run;
    let rule = model.pool.as_ref()?;
    let b = rank_breakdown(rd, rank, model);
    let device = b.device.as_ref().map(|d| &d.amount);
    let logged = match &b.row(Category::KvPool)?.value {
        RowValue::Measured(a) => a.clone(),
        _ => return None,
    };
    let (fraction, fraction_default) = match config_f64(run, &rule.fraction) {
        Some(f) => (f, false),
        None => (rule.fraction_default?, true),
    };
    let total = evaluate(rd, rank, &rule.total, device, None)?;
    // No `used` formulas: the server subtracts nothing (a fraction of free memory).
    let used = if rule.used.is_empty() {
        Amount {
            bytes: 0,
            resolution: 0,
            step: 0,
            formula: 0,
            terms: Vec::new(),
        }
    } else {
        evaluate(rd, rank, &rule.used, device, None)?
    };
    let predicted = (total.bytes as f64 * fraction).round() as i64 - used.bytes;
    Some(PoolCheck {
        setting: rule.fraction.clone(),
        fraction,
        fraction_default,
        resolution: total.resolution + used.resolution + logged.resolution,
        total,
        used,
        predicted,
        logged: logged.bytes,
        logged_step: logged.step,
    })
}

/// The log's bytes per token: the KV pool category over the pool's tokens.
fn log_per_token(
    rd: &Reader,
    rank: &RankRun,
    model: &MemoryModel,
    tokens: i64,
    page: i64,
) -> Option<LogPerToken> {
    let b = rank_breakdown(rd, rank, model);
    let RowValue::Measured(a) = &b.row(Category::KvPool)?.value else {
        return None;
    };
    if tokens <= 0 {
        return None;
    }
    let bytes = a.bytes as f64 / tokens as f64;
    // Up to one page's worth may be left over when the pool is rounded to whole pages.
    let tolerance = (a.resolution as f64 + bytes * page as f64) / tokens as f64;
    Some(LogPerToken {
        bytes,
        tolerance,
        memory: a.clone(),
    })
}

fn server_said(run: &Run, pool_tokens: i64, page: i64) -> Option<ServerConcurrency> {
    let e = run.events.iter().find(|e| e.kind == "max_concurrency")?;
    let tokens = e.fields.get("tokens_per_request")?.as_i64()?;
    let concurrency = e.fields.get("concurrency")?.as_f64()?;
    Some(ServerConcurrency {
        tokens,
        concurrency,
        origin: e.origin.clone(),
        ours: requests_at(pool_tokens, page, tokens, None).concurrency,
    })
}

/// The run's capacity: the rank with the smallest pool, the lengths asked for.
pub fn capacity(run: &Run, lengths: &[i64], shape: Option<&ModelShape>) -> Option<Capacity> {
    let model = model_of(run)?;
    let rd = Reader::new(run);
    let (page, page_size_default) =
        match model.page_size.as_deref().and_then(|k| config_int(run, k)) {
            Some(p) if p > 0 => (p, false),
            _ => (model.page_size_default, true),
        };
    let pools: Vec<(&RankRun, Pool)> = run
        .worker_ranks()
        .filter_map(|r| Some((r, pool_of(&rd, r, model, page)?)))
        .collect();
    let (rank, pool) = pools.iter().min_by_key(|(_, p)| p.tokens).cloned()?;
    let Pool {
        tokens: pool_tokens,
        origin: pool_origin,
        pages: pool_pages,
    } = pool;
    let ranks_differ = pools.iter().any(|(_, p)| p.tokens != pool_tokens);
    let limit = model
        .limits
        .iter()
        .find_map(|l| Some((l.clone(), limit_value(&rd, rank, l)?)));
    let lim = limit.as_ref().map(|l| l.1);
    let tp = model
        .tp_size
        .as_deref()
        .and_then(|k| config_int(run, k))
        .unwrap_or(1);
    let kv_dtype = model
        .kv_dtype
        .as_deref()
        .and_then(|k| config_str(run, k))
        .filter(|d| d != "auto");
    Some(Capacity {
        rank: rank.rank.clone(),
        ranks_differ,
        pool_tokens,
        pool_origin,
        pool_pages,
        page_size: page,
        page_size_default,
        log_per_token: log_per_token(&rd, rank, model, pool_tokens, page),
        model_per_token: shape.map(|s| model_kv(s, tp, kv_dtype.as_deref())),
        limit,
        lengths: lengths
            .iter()
            .map(|&t| requests_at(pool_tokens, page, t, lim))
            .collect(),
        server_said: server_said(run, pool_tokens, page),
        pool_check: pool_check(&rd, rank, model),
    })
}

/// What the candidate's changes cost in capacity against the baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacityCost {
    /// The configuration keys that changed (the cost is theirs together).
    pub changes: Vec<String>,
    /// The change in the pool's tokens, candidate minus baseline.
    pub tokens_delta: i64,
    /// (request length, change in concurrent requests of that length).
    pub per_length: Vec<(i64, f64)>,
}

pub(crate) fn capacity_cost(
    baseline: &Capacity,
    candidate: &Capacity,
    changes: Vec<String>,
) -> CapacityCost {
    let per_length = baseline
        .lengths
        .iter()
        .zip(&candidate.lengths)
        .map(|(b, c)| (b.tokens, c.concurrency - b.concurrency))
        .collect();
    CapacityCost {
        changes,
        tokens_delta: candidate.pool_tokens - baseline.pool_tokens,
        per_length,
    }
}
