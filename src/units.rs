//! Numbers as servers print them, turned into bytes and seconds.

pub const KIB: f64 = 1024.0;
pub const MIB: f64 = 1024.0 * 1024.0;
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Multiplier for a unit word. SGLang's `GB` is GiB (it divides by 2^30), and so is
/// vLLM V0's `GB`; decimal units do not occur in these logs.
pub fn unit_multiplier(unit: &str) -> Option<f64> {
    let u = unit.trim();
    Some(match u {
        "B" | "bytes" | "byte" => 1.0,
        "KiB" | "KB" | "kB" | "K" => KIB,
        "MiB" | "MB" | "M" => MIB,
        "GiB" | "GB" | "G" => GIB,
        "TiB" | "TB" | "T" => GIB * 1024.0,
        _ => return None,
    })
}

/// Parses a decimal number and returns it with the value of one step of its last printed
/// digit (`"0.60"` → 0.01), which is the resolution of a printed figure.
pub fn parse_decimal(text: &str) -> Option<(f64, f64)> {
    let t = text.trim().replace(',', "");
    if t.is_empty() {
        return None;
    }
    let value: f64 = t.parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    let decimals = t.split_once('.').map_or(0, |(_, frac)| {
        frac.chars().take_while(|c| c.is_ascii_digit()).count()
    });
    Some((value, 10f64.powi(-(decimals as i32))))
}

/// `(bytes, resolution_bytes)` for a number printed in `unit`.
pub fn to_bytes(number: &str, unit: &str) -> Option<(i64, u64)> {
    let (value, step) = parse_decimal(number)?;
    let mult = unit_multiplier(unit)?;
    let bytes = (value * mult).round();
    if bytes.abs() > 9.0e18 {
        return None;
    }
    Some((bytes as i64, (step * mult).round().max(1.0) as u64))
}

/// Parses `"20.00 MiB"`, `"1.5GiB"`, `"0 bytes"`.
pub fn parse_size(text: &str) -> Option<(i64, u64)> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == ','))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    to_bytes(num, if unit.trim().is_empty() { "B" } else { unit })
}

/// Human form of a byte count, binary units, two decimals: `24.03 MiB`, `512 B`.
pub fn human_bytes(bytes: i64) -> String {
    let sign = if bytes < 0 { "-" } else { "" };
    format!("{sign}{}", human_size(bytes.unsigned_abs()))
}

/// The same for an unsigned size (snapshot sizes are `u64`).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / KIB;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2} {}", UNITS[u])
}

/// A signed delta in MiB for tables: `+40 MiB`, `-10.2 MiB`.
pub fn human_delta_mib(bytes: i64) -> String {
    let mib = bytes as f64 / MIB;
    if mib == 0.0 {
        return "0".into();
    }
    if mib.abs() >= 1024.0 {
        let gib = mib / 1024.0;
        return format!("{}{:.2} GiB", if gib < 0.0 { "-" } else { "+" }, gib.abs());
    }
    let body = if (mib.round() - mib).abs() < 0.05 {
        format!("{:.0}", mib.abs())
    } else {
        format!("{:.1}", mib.abs())
    };
    format!("{}{} MiB", if mib < 0.0 { "-" } else { "+" }, body)
}

/// Thousands separators: `91,141`.
pub fn group_thousands(n: i64) -> String {
    let s = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sglang_gb_is_gib_with_print_resolution() {
        // 0.60 GiB = 0.6 * 2^30 = 644,245,094.4 bytes; one step of 0.01 GiB = 10,737,418 bytes.
        assert_eq!(to_bytes("0.60", "GB"), Some((644_245_094, 10_737_418)));
        assert_eq!(parse_size("20.00 MiB"), Some((20_971_520, 10_486)));
        assert_eq!(parse_size("0 bytes"), Some((0, 1)));
        assert_eq!(parse_size("1.5GiB").map(|x| x.0), Some(1_610_612_736));
        assert_eq!(parse_decimal("613,024").map(|x| x.0), Some(613_024.0));
        assert_eq!(parse_decimal("nan"), None);
        assert_eq!(parse_decimal(""), None);
    }

    #[test]
    fn human_forms() {
        assert_eq!(human_bytes(25_198_592), "24.03 MiB");
        assert_eq!(human_delta_mib(41_943_040), "+40 MiB");
        assert_eq!(human_delta_mib(-10_737_418), "-10.2 MiB");
        // 63.08 − 55.84 GiB
        assert_eq!(human_delta_mib(7_773_890_806), "+7.24 GiB");
        assert_eq!(group_thousands(91_141), "91,141");
        assert_eq!(group_thousands(-597), "-597");
    }
}
