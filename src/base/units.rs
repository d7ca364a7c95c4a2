//! Numbers as servers print them, turned into bytes and seconds.

pub(crate) const KIB: f64 = 1024.0;
pub(crate) const MIB: f64 = 1024.0 * 1024.0;
pub(crate) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Multiplier for a unit word. SGLang's `GB` is GiB (it divides by 2^30), and so is
/// vLLM V0's `GB`; decimal units do not occur in these logs.
pub(crate) fn unit_multiplier(unit: &str) -> Option<f64> {
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
pub(crate) fn parse_decimal(text: &str) -> Option<(f64, f64)> {
    let t = text.trim();
    if let Some(read) = plain_decimal(t) {
        return Some(read);
    }
    // Thousands separators dropped; most numbers have none, and are not copied.
    let t = if t.contains(',') {
        std::borrow::Cow::Owned(t.replace(',', ""))
    } else {
        std::borrow::Cow::Borrowed(t)
    };
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

/// [`parse_decimal`] of the figures logs print most (`0.64`, `91141`): digits, and at most
/// one point with digits on both sides, fifteen digits in all. Their digits as an integer
/// and a power of ten are both exact in an `f64`, so the one rounding of their quotient
/// gives the nearest `f64` to the decimal, which is what `str::parse` gives; a general
/// parse cost several hundred instructions a figure. `None` for any other text.
///
/// One pass over the bytes, the step from a table (`1e-3` is `10f64.powi(-3)` bit for bit:
/// both are the nearest `f64` to the decimal): `split_once`, two digit tests, a fold and
/// `powi` took ~300 instructions a figure, ~1 % of loading 8,192 rank files.
fn plain_decimal(t: &str) -> Option<(f64, f64)> {
    const EXACT: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    const STEP: [f64; 16] = [
        1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13,
        1e-14, 1e-15,
    ];
    let (mut mantissa, mut digits, mut point) = (0u64, 0usize, None);
    for &b in t.as_bytes() {
        match b {
            b'0'..=b'9' if digits < 15 => {
                mantissa = mantissa * 10 + u64::from(b - b'0');
                digits += 1;
            }
            // One point, with a digit before it.
            b'.' if point.is_none() && digits > 0 => point = Some(digits),
            _ => return None,
        }
    }
    let decimals = digits - point.unwrap_or(digits);
    // No digit at all, or a point with none after it.
    if digits == 0 || (point.is_some() && decimals == 0) {
        return None;
    }
    Some((mantissa as f64 / EXACT[decimals], STEP[decimals]))
}

/// `(bytes, resolution_bytes)` for a number printed in `unit`.
pub(crate) fn to_bytes(number: &str, unit: &str) -> Option<(i64, u64)> {
    let (value, step) = parse_decimal(number)?;
    let mult = unit_multiplier(unit)?;
    let bytes = (value * mult).round();
    if bytes.abs() > 9.0e18 {
        return None;
    }
    Some((bytes as i64, (step * mult).round().max(1.0) as u64))
}

/// Parses `"20.00 MiB"`, `"1.5GiB"`, `"0 bytes"`.
pub(crate) fn parse_size(text: &str) -> Option<(i64, u64)> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == ','))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    to_bytes(num, if unit.trim().is_empty() { "B" } else { unit })
}

/// Human form of a byte count, binary units, two decimals: `24.03 MiB`, `512 B`. A unit
/// holds values below 1000 (`1000 MiB` is `0.98 GiB`), so no figure has four integer
/// digits.
pub(crate) fn human_bytes(bytes: impl Into<i64>) -> String {
    let bytes: i64 = bytes.into();
    let sign = if bytes < 0 { "-" } else { "" };
    format!("{sign}{}", human_size(bytes.unsigned_abs()))
}

/// The same for an unsigned size (snapshot sizes are `u64`).
pub fn human_size(bytes: impl Into<u64>) -> String {
    let bytes: u64 = bytes.into();
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / KIB;
    let mut u = 0;
    // 999.996 would print as 1000.00: it moves up too.
    while v >= 999.995 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2} {}", UNITS[u])
}

/// A figure the log printed, in the unit and with the decimals its print resolution
/// gives: SGLang's `0.64 GB` (one step 0.01 GiB) is `0.64 GiB`, `20.00 MiB` stays,
/// `1.5 GB` is `1.5 GiB`; a byte-exact figure is `human_bytes`. As in `human_size` a unit
/// holds values below 1000: a figure past it moves up a unit with the decimals that keep
/// its resolution (vLLM's `65.7221 GiB`, one step 0.0001 GiB, stays `65.7221 GiB`, not
/// `67299.4 MiB`; `4096 MiB` is `4.000 GiB`).
pub(crate) fn bytes_as_printed(bytes: impl Into<i64>, resolution: u64) -> String {
    let bytes: i64 = bytes.into();
    if resolution <= 1 {
        return human_bytes(bytes);
    }
    const UNITS: [(f64, &str); 5] = [
        (1.0, "B"),
        (KIB, "KiB"),
        (MIB, "MiB"),
        (GIB, "GiB"),
        (GIB * 1024.0, "TiB"),
    ];
    let res = resolution as f64;
    // The largest unit the resolution is at least a thousandth of (three decimals at most).
    let mut at = UNITS
        .iter()
        .rposition(|(u, _)| res * 1000.0 >= u * 0.999)
        .unwrap_or(0);
    let mut decimals = (UNITS[at].0 / res).log10().round().clamp(0.0, 3.0) as usize;
    let rounded = |at: usize, decimals: usize| {
        let v = (bytes as f64 / UNITS[at].0).abs();
        let step = 10f64.powi(-(decimals as i32));
        (v / step).round() * step
    };
    while at + 1 < UNITS.len() && rounded(at, decimals) >= 1000.0 {
        at += 1;
        decimals = (UNITS[at].0 / res).log10().round().clamp(0.0, 4.0) as usize;
    }
    let (unit, name) = UNITS[at];
    format!("{:.*} {name}", decimals, bytes as f64 / unit)
}

/// A signed size for delta columns, the rule of `human_bytes` with its sign: `+41.00 MiB`,
/// `+20.50 MiB`, `-501.80 MiB`, `+1.20 GiB`; `±0 B` for no change, so that a delta is
/// never read as an absolute size.
pub(crate) fn human_delta(bytes: impl Into<i64>) -> String {
    let bytes: i64 = bytes.into();
    match bytes.signum() {
        1 => format!("+{}", human_size(bytes.unsigned_abs())),
        -1 => format!("-{}", human_size(bytes.unsigned_abs())),
        _ => "±0 B".into(),
    }
}

/// A time span in seconds (a window between two stamps, a change of one, the stamps'
/// resolution, a threshold): a type of its own where it crosses from `analysis` to
/// `render`, so that a byte count or a plain ratio cannot be passed where a time is meant.
/// Printed by [`seconds`] and [`seconds_delta`], which take it as they take an `f64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Seconds(pub f64);

impl Seconds {
    /// No time.
    pub const ZERO: Seconds = Seconds(0.0);

    /// Whole milliseconds (a stamp difference) as seconds.
    pub fn from_ms(ms: i64) -> Seconds {
        Seconds(ms as f64 / 1000.0)
    }
    /// The number of seconds.
    pub fn get(self) -> f64 {
        self.0
    }
    /// Its size, without its sign.
    pub fn abs(self) -> Seconds {
        Seconds(self.0.abs())
    }
    /// The longer of two.
    pub fn max(self, other: Seconds) -> Seconds {
        Seconds(self.0.max(other.0))
    }
    /// More than zero.
    pub fn is_positive(self) -> bool {
        self.0 > 0.0
    }
    /// Less than zero.
    pub fn is_negative(self) -> bool {
        self.0 < 0.0
    }
    /// `f64::total_cmp` of the two.
    pub fn total_cmp(&self, other: &Seconds) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl std::ops::Add for Seconds {
    type Output = Seconds;
    fn add(self, o: Seconds) -> Seconds {
        Seconds(self.0 + o.0)
    }
}

impl std::ops::Sub for Seconds {
    type Output = Seconds;
    fn sub(self, o: Seconds) -> Seconds {
        Seconds(self.0 - o.0)
    }
}

impl std::ops::Neg for Seconds {
    type Output = Seconds;
    fn neg(self) -> Seconds {
        Seconds(-self.0)
    }
}

/// A fraction of a time (a tolerance of the baseline's figure).
impl std::ops::Mul<Seconds> for f64 {
    type Output = Seconds;
    fn mul(self, s: Seconds) -> Seconds {
        Seconds(self * s.0)
    }
}

impl From<Seconds> for f64 {
    fn from(s: Seconds) -> f64 {
        s.0
    }
}

/// An amount of memory: what a snapshot, nvidia-smi or an OOM message counted, never
/// negative. A type of its own where it leaves the module that counted it, so a token
/// count or a signed change cannot be passed where an amount is meant; printed by
/// [`human_size`]. Serialised as its number (`serde(transparent)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl Bytes {
    /// No memory.
    pub const ZERO: Bytes = Bytes(0);

    /// The number of bytes.
    pub fn get(self) -> u64 {
        self.0
    }
    /// `self + other`, or `None` past 2^64 bytes (sizes from a hostile input can sum
    /// past it: docs/reliability.md, D19).
    pub fn checked_add(self, other: Bytes) -> Option<Bytes> {
        self.0.checked_add(other.0).map(Bytes)
    }
    /// `self + other`, held at 2^64 - 1 bytes.
    pub fn saturating_add(self, other: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(other.0))
    }
    /// The sum of `amounts`, or `None` past 2^64 bytes.
    pub fn checked_sum(amounts: impl IntoIterator<Item = Bytes>) -> Option<Bytes> {
        amounts
            .into_iter()
            .try_fold(Bytes::ZERO, |sum, b| sum.checked_add(b))
    }
    /// The change from `self` to `to`, held within an `i64` (a change past 8 EiB is
    /// beyond any device).
    pub fn change_to(self, to: Bytes) -> ByteDelta {
        let d = i128::from(to.0) - i128::from(self.0);
        ByteDelta(d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
    }
    /// The amount as a signed number of bytes, held at `i64::MAX`, for arithmetic with
    /// the logs' figures (which are signed: a printed size may carry a sign).
    pub fn as_signed(self) -> ByteDelta {
        ByteDelta(i64::try_from(self.0).unwrap_or(i64::MAX))
    }
}

/// For the JSON's signed `bytes` (`MemoryDoc`), which holds any amount up to 8 EiB.
impl TryFrom<Bytes> for i64 {
    type Error = std::num::TryFromIntError;
    fn try_from(b: Bytes) -> Result<i64, Self::Error> {
        i64::try_from(b.0)
    }
}

impl From<Bytes> for u64 {
    fn from(b: Bytes) -> u64 {
        b.0
    }
}

/// A signed change of memory (a diff's delta, an attribution's residual, the baseline's
/// figure less the candidate's), or a signed amount computed from printed figures (the
/// device less what the terms add up to). Printed by [`human_delta`] with its sign, or by
/// [`human_bytes`] as an amount. Serialised as its number (`serde(transparent)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct ByteDelta(pub i64);

impl ByteDelta {
    /// No change.
    pub const ZERO: ByteDelta = ByteDelta(0);

    /// The number of bytes, with its sign.
    pub fn get(self) -> i64 {
        self.0
    }
    /// Its size, without its sign.
    pub fn magnitude(self) -> Bytes {
        Bytes(self.0.unsigned_abs())
    }
}

/// Held at the bounds of `i64` (changes summed over sites or ranks of a hostile input).
impl std::ops::Add for ByteDelta {
    type Output = ByteDelta;
    fn add(self, o: ByteDelta) -> ByteDelta {
        ByteDelta(self.0.saturating_add(o.0))
    }
}

/// Held at the bounds of `i64`.
impl std::ops::Sub for ByteDelta {
    type Output = ByteDelta;
    fn sub(self, o: ByteDelta) -> ByteDelta {
        ByteDelta(self.0.saturating_sub(o.0))
    }
}

impl std::ops::Neg for ByteDelta {
    type Output = ByteDelta;
    fn neg(self) -> ByteDelta {
        ByteDelta(self.0.saturating_neg())
    }
}

impl From<ByteDelta> for i64 {
    fn from(d: ByteDelta) -> i64 {
        d.0
    }
}

/// Seconds, the one style of every time rankscope prints: a space before the unit, one
/// decimal below 100 s (`4.0 s`, `12.5 s`) and whole seconds from 100 s (`2600 s`), where
/// a tenth is below what the logs' whole-second stamps resolve and would only widen
/// columns. Snapshot times (microsecond stamps) follow the same rule, so that `mem` and
/// `summary` print one style.
pub(crate) fn seconds(s: impl Into<f64>) -> String {
    format!("{} s", seconds_number(s.into()))
}

/// A span in whole seconds, rounded to the nearest (351.997 s is 352, not 351), for the
/// texts that print whole seconds (`last event 352 s later`, `no line for 287 s`).
pub(crate) fn round_s(d: chrono::TimeDelta) -> i64 {
    let ms = d.num_milliseconds();
    (ms + ms.signum() * 500) / 1000
}

/// The number of [`seconds`] without its unit, for a column that names the unit once
/// (`4.0 / 4.8 / 5.5 s`).
pub(crate) fn seconds_number(s: impl Into<f64>) -> String {
    let s: f64 = s.into();
    if s.abs() >= 99.95 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

/// A time since the run's (or the snapshot's) first stamp: `t+5.2 s`.
pub(crate) fn since_start(s: impl Into<f64>) -> String {
    format!("t+{}", seconds(s))
}

/// A signed change of seconds: `+6.0 s`, `-120 s`; `0 s` for none.
pub(crate) fn seconds_delta(s: impl Into<f64>) -> String {
    let s: f64 = s.into();
    if s == 0.0 {
        "0 s".into()
    } else if s > 0.0 {
        format!("+{}", seconds(s))
    } else {
        format!("-{}", seconds(-s))
    }
}

/// A clock offset between two clocks (a node's, a snapshot's), which is estimated finer
/// than a stamp: two decimals and its sign, `+0.42 s`, `-2.50 s`.
pub(crate) fn clock_offset(s: impl Into<f64>) -> String {
    let s: f64 = s.into();
    let sign = if s < 0.0 { "-" } else { "+" };
    format!("{sign}{:.2} s", s.abs())
}

/// Thousands separators: `91,141`.
pub(crate) fn group_thousands(n: i64) -> String {
    let s = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
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
    fn a_plain_decimal_reads_as_the_general_parse_reads_it() {
        // Every shape of digits and point up to fifteen digits, digits from a fixed
        // sequence: value and step bit for bit as `str::parse` and the decimals give them.
        let general = |t: &str| {
            let value: f64 = t.parse().ok()?;
            let decimals = t.split_once('.').map_or(0, |(_, f)| f.len());
            Some((value, 10f64.powi(-(decimals as i32))))
        };
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut compared = 0;
        for total in 1..=15usize {
            for point in 0..total {
                for _ in 0..40 {
                    let mut t = String::new();
                    for k in 0..total {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        if k == point && point > 0 {
                            t.push('.');
                        }
                        t.push(char::from(b'0' + (seed >> 60) as u8 % 10));
                    }
                    let fast = plain_decimal(&t).unwrap_or_else(|| panic!("{t}"));
                    let slow = general(&t).unwrap();
                    assert_eq!(fast.0.to_bits(), slow.0.to_bits(), "{t}");
                    assert_eq!(fast.1.to_bits(), slow.1.to_bits(), "{t}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 4000);
        // Hand-checked: SGLang's `0.64` and a token count.
        assert_eq!(parse_decimal("0.64"), Some((0.64, 0.01)));
        assert_eq!(parse_decimal(" 91141 "), Some((91141.0, 1.0)));
        // Other shapes are left to the general parse.
        for other in [
            "",
            ".5",
            "5.",
            "-1.5",
            "1,024",
            "1e3",
            "1.2.3",
            "1234567890123456",
        ] {
            assert_eq!(plain_decimal(other), None, "{other}");
        }
        assert_eq!(parse_decimal("1,024.5"), Some((1024.5, 0.1)));
        assert_eq!(parse_decimal("-1.5"), Some((-1.5, 0.1)));
    }

    #[test]
    fn seconds_keep_their_arithmetic_and_print_as_times() {
        // A stamp difference of 1,500 ms; a 20 % tolerance of a 15 s window is 3 s.
        assert_eq!(Seconds::from_ms(1500), Seconds(1.5));
        assert_eq!(0.2 * Seconds(15.0), Seconds(3.0));
        assert_eq!(Seconds(11.0) - Seconds(3.0), Seconds(8.0));
        assert_eq!((Seconds(3.0) - Seconds(11.0)).abs(), Seconds(8.0));
        assert_eq!(Seconds(2.0).max(Seconds(3.0)), Seconds(3.0));
        assert!(Seconds(0.5).is_positive() && (-Seconds(0.5)).is_negative());
        // Printed as an f64 of the same value is.
        assert_eq!(seconds(Seconds(12.5)), seconds(12.5));
        assert_eq!(seconds(Seconds(12.5)), "12.5 s");
        assert_eq!(seconds_delta(Seconds(-120.0)), "-120 s");
        assert_eq!(seconds_delta(Seconds::ZERO), "0 s");
    }

    #[test]
    fn whole_seconds_round_to_the_nearest() {
        let ms = chrono::TimeDelta::milliseconds;
        // 17:02:10.003 to 17:08:02.000 (made-up-server-10's failing run) is 351.997 s.
        assert_eq!(round_s(ms(351_997)), 352);
        assert_eq!(round_s(ms(351_499)), 351);
        assert_eq!(round_s(ms(500)), 1);
        assert_eq!(round_s(ms(0)), 0);
        assert_eq!(round_s(ms(-1_600)), -2);
    }

    #[test]
    fn bytes_keep_their_arithmetic_and_print_as_sizes() {
        // Two 2^62-byte segments fit; five do not (D19's input: 5 x 2^62 > 2^64).
        let quarter = Bytes(1 << 62);
        assert_eq!(Bytes::checked_sum([quarter; 2]), Some(Bytes(1 << 63)));
        assert_eq!(Bytes::checked_sum([quarter; 5]), None);
        assert_eq!(Bytes(u64::MAX).saturating_add(Bytes(1)), Bytes(u64::MAX));
        // 20 MiB to 61 MiB is +41 MiB; back is -41 MiB.
        let (a, b) = (Bytes(20 << 20), Bytes(61 << 20));
        assert_eq!(a.change_to(b), ByteDelta(41 << 20));
        assert_eq!(b.change_to(a), -ByteDelta(41 << 20));
        assert_eq!(b.change_to(a).magnitude(), Bytes(41 << 20));
        assert_eq!(ByteDelta(5) - ByteDelta(8), ByteDelta(-3));
        assert_eq!(ByteDelta(i64::MAX) + ByteDelta(1), ByteDelta(i64::MAX));
        assert_eq!(-ByteDelta(i64::MIN), ByteDelta(i64::MAX));
        // A change past i64 is held at its bound, not wrapped.
        assert_eq!(Bytes(0).change_to(Bytes(u64::MAX)), ByteDelta(i64::MAX));
        assert_eq!(Bytes(u64::MAX).as_signed(), ByteDelta(i64::MAX));
        // Printed as the bare integers of the same value are.
        assert_eq!(human_size(Bytes(1_048_576_000)), "0.98 GiB");
        assert_eq!(human_delta(ByteDelta(41 << 20)), "+41.00 MiB");
        assert_eq!(human_bytes(ByteDelta(-25_198_592)), "-24.03 MiB");
        // The JSON is the number.
        assert_eq!(serde_json::to_string(&Bytes(512)).expect("json"), "512");
        assert_eq!(serde_json::to_string(&ByteDelta(-3)).expect("json"), "-3");
    }

    #[test]
    fn one_style_for_sizes_and_deltas() {
        // 1000 MiB = 1,048,576,000 bytes = 0.977 GiB: four integer digits move up a unit.
        assert_eq!(human_size(1_048_576_000_u64), "0.98 GiB");
        assert_eq!(human_size(999_u64 * 1_048_576), "999.00 MiB");
        assert_eq!(human_size(1000_u64), "0.98 KiB");
        assert_eq!(human_size(999_u64), "999 B");
        // 1023.999 MiB rounds to 1024.00 at two decimals: it is 1.00 GiB.
        assert_eq!(human_size(1_073_740_775_u64), "1.00 GiB");
        // Deltas: the same two decimals whatever the value (were +41 MiB, +20.5 MiB).
        assert_eq!(human_delta(41_i64 * 1_048_576), "+41.00 MiB");
        assert_eq!(human_delta(21_495_808_i64), "+20.50 MiB");
        assert_eq!(human_delta(-526_175_436_i64), "-501.80 MiB");
        assert_eq!(human_delta(0_i64), "±0 B");
    }

    #[test]
    fn printed_figures_keep_their_unit_and_decimals() {
        // `0.64 GB` (SGLang's GB is GiB): 0.64 × 2^30 = 687,194,767 bytes, step 0.01 GiB.
        let (b, r) = to_bytes("0.64", "GB").expect("a size");
        assert_eq!(bytes_as_printed(b, r), "0.64 GiB");
        let (b, r) = to_bytes("1.5", "GB").expect("a size");
        assert_eq!(bytes_as_printed(b, r), "1.5 GiB");
        let (b, r) = to_bytes("20.00", "MiB").expect("a size");
        assert_eq!(bytes_as_printed(b, r), "20.00 MiB");
        // Four integer digits move up a unit, keeping the resolution: 1 MiB is 0.001 GiB.
        let (b, r) = to_bytes("4096", "MiB").expect("a size");
        assert_eq!(bytes_as_printed(b, r), "4.000 GiB");
        // vLLM's `Model loading took 65.7221 GiB` (samples/vllm-tp2/server.log:16): one
        // step 0.0001 GiB = 107,374 bytes, which is 0.1 MiB; it was `67299.4 MiB`.
        let (b, r) = to_bytes("65.7221", "GiB").expect("a size");
        assert_eq!(bytes_as_printed(b, r), "65.7221 GiB");
        let (b, r) = to_bytes("0.640", "GiB").expect("a size");
        assert_eq!(bytes_as_printed(b, r), "0.640 GiB");
        // Exact bytes: the general rule.
        assert_eq!(bytes_as_printed(20_971_520, 1), "20.00 MiB");
    }

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
    fn one_style_for_seconds() {
        assert_eq!(seconds(4.0), "4.0 s");
        assert_eq!(seconds(99.94), "99.9 s");
        // 99.96 would print 100.0 at one decimal: it is past the switch.
        assert_eq!(seconds(99.96), "100 s");
        assert_eq!(seconds(2600.0), "2600 s");
        assert_eq!(seconds_number(12.25), "12.2");
        // A snapshot's 4,206,123 us since its first entry: one decimal, as t+5.2 s
        // elsewhere (mem printed t+4.206 s).
        assert_eq!(since_start(4.206_123), "t+4.2 s");
        assert_eq!(seconds_delta(6.0), "+6.0 s");
        assert_eq!(seconds_delta(-120.0), "-120 s");
        assert_eq!(seconds_delta(0.0), "0 s");
        assert_eq!(clock_offset(0.42), "+0.42 s");
        assert_eq!(clock_offset(-2.5), "-2.50 s");
    }

    #[test]
    fn human_forms() {
        assert_eq!(human_bytes(25_198_592_i64), "24.03 MiB");
        assert_eq!(human_delta(41_943_040_i64), "+40.00 MiB");
        // 10,737,418 / 2^20 = 10.240 MiB.
        assert_eq!(human_delta(-10_737_418_i64), "-10.24 MiB");
        // 63.08 − 55.84 GiB
        assert_eq!(human_delta(7_773_890_806_i64), "+7.24 GiB");
        assert_eq!(group_thousands(91_141), "91,141");
        assert_eq!(group_thousands(-597), "-597");
    }
}
