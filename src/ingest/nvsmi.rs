//! `nvidia-smi --format=csv` output: `--query-gpu=…` samples (`-lms 200`) and
//! `--query-compute-apps=…` listings, in any column order.
//!
//! Column names are matched without their unit suffix (`memory.used [MiB]` →
//! `memory.used`), values carry their own unit (`15019 MiB`), `[N/A]`/`[Not Supported]`
//! read as absent, and a line that cannot be read is counted, never fatal: `nvidia-smi -l`
//! logs get interleaved with shell prompts, repeated headers and cut final lines.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;

use crate::base::units::Bytes;

/// One `--query-gpu` sample.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSample {
    /// The sample's stamp as printed (local wall-clock time).
    pub timestamp: Option<NaiveDateTime>,
    pub(crate) index: u32,
    /// Memory used on the GPU.
    pub memory_used_bytes: Option<Bytes>,
    /// The GPU's memory.
    pub memory_total_bytes: Option<Bytes>,
    /// GPU utilisation, in percent.
    pub utilization_gpu_pct: Option<f64>,
}

/// One `--query-compute-apps` row.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputeApp {
    pub(crate) timestamp: Option<NaiveDateTime>,
    pub(crate) gpu_index: Option<u32>,
    pub(crate) gpu_uuid: Option<String>,
    /// The process id.
    pub pid: Option<u32>,
    /// The process name as nvidia-smi printed it.
    pub process_name: Option<String>,
    /// Memory the process used on the GPU.
    pub used_memory_bytes: Option<Bytes>,
}

/// An nvidia-smi CSV read: GPU samples and per-process rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NvSmiTimeline {
    /// Samples per GPU index, in file order.
    pub gpus: BTreeMap<u32, Vec<GpuSample>>,
    /// `--query-compute-apps` rows, in file order.
    pub apps: Vec<ComputeApp>,
    /// Non-empty lines that were neither a header nor a readable row.
    pub lines_not_understood: usize,
    /// The first few of those (line number, 1-based, and text), for messages.
    pub examples_not_understood: Vec<(usize, String)>,
}

impl NvSmiTimeline {
    /// The largest `memory.used` per GPU, with when it was seen.
    pub fn peak_used(&self) -> BTreeMap<u32, (Bytes, Option<NaiveDateTime>)> {
        let mut out = BTreeMap::new();
        for (&gpu, samples) in &self.gpus {
            let best = samples
                .iter()
                .filter_map(|s| Some((s.memory_used_bytes?, s.timestamp)))
                .max_by_key(|(b, _)| *b);
            if let Some(b) = best {
                out.insert(gpu, b);
            }
        }
        out
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Col {
    Timestamp,
    Index,
    MemUsed,
    MemTotal,
    UtilGpu,
    Pid,
    ProcessName,
    UsedGpuMemory,
    GpuUuid,
    Other,
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Gpu,
    Apps,
}

fn column(name: &str) -> Col {
    let base = name
        .split('[')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match base.as_str() {
        "timestamp" => Col::Timestamp,
        "index" | "gpu_index" => Col::Index,
        "memory.used" => Col::MemUsed,
        "memory.total" => Col::MemTotal,
        "utilization.gpu" => Col::UtilGpu,
        "pid" => Col::Pid,
        "process_name" | "name" => Col::ProcessName,
        "used_gpu_memory" | "used_memory" => Col::UsedGpuMemory,
        "gpu_uuid" | "uuid" => Col::GpuUuid,
        _ => Col::Other,
    }
}

/// Unit given in a header, e.g. `[MiB]`, applied to bare numbers in that column.
fn header_unit(name: &str) -> Option<String> {
    let open = name.find('[')?;
    let close = name[open..].find(']')? + open;
    Some(name[open + 1..close].trim().to_string())
}

fn is_na(v: &str) -> bool {
    let v = v.trim();
    v.is_empty() || (v.starts_with('[') && v.ends_with(']')) || v.eq_ignore_ascii_case("N/A")
}

fn unit_factor(u: &str) -> Option<f64> {
    Some(match u.trim() {
        "B" | "" => 1.0,
        "KiB" | "KB" => 1024.0,
        "MiB" | "MB" => 1024.0 * 1024.0,
        "GiB" | "GB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

/// `15019 MiB`, or a bare number in the header's unit. `Err` means unreadable, `Ok(None)`
/// means the tool said it does not know.
fn bytes(v: &str, unit: Option<&str>) -> Result<Option<u64>, ()> {
    if is_na(v) {
        return Ok(None);
    }
    let v = v.trim();
    let (num, u) = match v.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&v[..i], &v[i..]),
        None => (v, unit.unwrap_or("MiB")),
    };
    let n: f64 = num.trim().parse().map_err(|_| ())?;
    let f = unit_factor(u).ok_or(())?;
    if !(n.is_finite() && n >= 0.0) {
        return Err(());
    }
    Ok(Some((n * f).round() as u64))
}

fn percent(v: &str) -> Result<Option<f64>, ()> {
    if is_na(v) {
        return Ok(None);
    }
    let n: f64 = v
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| ())?;
    Ok(Some(n))
}

fn timestamp(v: &str) -> Result<Option<NaiveDateTime>, ()> {
    if is_na(v) {
        return Ok(None);
    }
    for f in [
        "%Y/%m/%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%a %b %e %H:%M:%S %Y",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(v.trim(), f) {
            return Ok(Some(t));
        }
    }
    Err(())
}

fn int<T: std::str::FromStr>(v: &str) -> Result<Option<T>, ()> {
    if is_na(v) {
        return Ok(None);
    }
    v.trim().parse().map(Some).map_err(|_| ())
}

struct Header {
    cols: Vec<(Col, Option<String>)>,
    kind: Kind,
}

fn header(line: &str) -> Option<Header> {
    let names: Vec<&str> = line.split(',').map(str::trim).collect();
    let cols: Vec<(Col, Option<String>)> =
        names.iter().map(|n| (column(n), header_unit(n))).collect();
    let has = |c: Col| cols.iter().any(|(x, _)| *x == c);
    let kind = if has(Col::Pid) {
        Kind::Apps
    } else if has(Col::MemUsed) || has(Col::Index) || has(Col::UtilGpu) {
        Kind::Gpu
    } else {
        return None;
    };
    // A header line has no digits outside its `[unit]`s.
    let digits = names.iter().any(|n| {
        n.split('[')
            .next()
            .unwrap_or("")
            .chars()
            .any(|c| c.is_ascii_digit())
    });
    (!digits).then_some(Header { cols, kind })
}

/// Parses nvidia-smi CSV text. Never fails: what it cannot read it counts.
pub fn parse(text: &str) -> NvSmiTimeline {
    let mut out = NvSmiTimeline::default();
    let mut head: Option<Header> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        if line.is_empty() {
            continue;
        }
        if let Some(h) = header(line) {
            head = Some(h);
            continue;
        }
        let ok = match &head {
            Some(h) => row(h, line, &mut out).is_ok(),
            None => false,
        };
        if !ok {
            out.lines_not_understood += 1;
            if out.examples_not_understood.len() < 5 {
                let shown: String = line.chars().take(120).collect();
                out.examples_not_understood.push((i + 1, shown));
            }
        }
    }
    out
}

fn row(h: &Header, line: &str, out: &mut NvSmiTimeline) -> Result<(), ()> {
    let vals: Vec<&str> = line.split(',').collect();
    // Process names may contain commas; only accept extra fields if a name column exists.
    let has_name = h.cols.iter().any(|(c, _)| *c == Col::ProcessName);
    if vals.len() != h.cols.len() && !(has_name && vals.len() > h.cols.len()) {
        return Err(());
    }
    let vals: Vec<String> = if vals.len() > h.cols.len() {
        let extra = vals.len() - h.cols.len();
        let name_at = h
            .cols
            .iter()
            .position(|(c, _)| *c == Col::ProcessName)
            .ok_or(())?;
        let mut v: Vec<String> = vals[..name_at].iter().map(|s| s.to_string()).collect();
        v.push(vals[name_at..=name_at + extra].join(","));
        v.extend(vals[name_at + extra + 1..].iter().map(|s| s.to_string()));
        v
    } else {
        vals.iter().map(|s| s.to_string()).collect()
    };
    match h.kind {
        Kind::Gpu => {
            let mut s = GpuSample {
                timestamp: None,
                index: 0,
                memory_used_bytes: None,
                memory_total_bytes: None,
                utilization_gpu_pct: None,
            };
            let mut any = false;
            for ((col, unit), v) in h.cols.iter().zip(&vals) {
                let u = unit.as_deref();
                match col {
                    Col::Timestamp => s.timestamp = timestamp(v)?,
                    Col::Index => s.index = int(v)?.ok_or(())?,
                    Col::MemUsed => s.memory_used_bytes = bytes(v, u)?.map(Bytes),
                    Col::MemTotal => s.memory_total_bytes = bytes(v, u)?.map(Bytes),
                    Col::UtilGpu => s.utilization_gpu_pct = percent(v)?,
                    _ => continue,
                }
                any = true;
            }
            if !any {
                return Err(());
            }
            out.gpus.entry(s.index).or_default().push(s);
        }
        Kind::Apps => {
            let mut a = ComputeApp {
                timestamp: None,
                gpu_index: None,
                gpu_uuid: None,
                pid: None,
                process_name: None,
                used_memory_bytes: None,
            };
            for ((col, unit), v) in h.cols.iter().zip(&vals) {
                match col {
                    Col::Timestamp => a.timestamp = timestamp(v)?,
                    Col::Index => a.gpu_index = int(v)?,
                    Col::GpuUuid => a.gpu_uuid = (!is_na(v)).then(|| v.trim().to_string()),
                    Col::Pid => a.pid = int(v)?,
                    Col::ProcessName => a.process_name = (!is_na(v)).then(|| v.trim().to_string()),
                    Col::UsedGpuMemory => {
                        a.used_memory_bytes = bytes(v, unit.as_deref())?.map(Bytes)
                    }
                    _ => {}
                }
            }
            if a.pid.is_none() {
                return Err(());
            }
            out.apps.push(a);
        }
    }
    Ok(())
}
