//! Kubernetes resource quantities (`resource.Quantity`), for the built-in admission plugins'
//! arithmetic, the QoS class of a Pod and the canonical form every stored quantity is written
//! in: parsed exactly (to nano units, apimachinery's finest precision, rounding up beyond it),
//! added, subtracted and compared, and printed in apimachinery's canonical form (`1500m`,
//! `1536Mi`, `2k`, `1e3`), keeping the format of the first operand as `Quantity.Add` does.
//!
//! The `kube_quantity` crate was considered: it prints `1.5` where apimachinery prints
//! `1500m` and has no exponent format, and admission messages quote canonical quantities.

use std::cmp::Ordering;
use std::fmt;

/// How a quantity is written: apimachinery's `Format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Powers of ten with SI suffixes (`m`, `k`, `M`, …).
    DecimalSi,
    /// Powers of 1024 (`Ki`, `Mi`, …).
    BinarySi,
    /// `e<exponent>` notation.
    DecimalExponent,
}

/// A parsed quantity: an exact value in nano units and the format it prints in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quantity {
    nanos: i128,
    format: Format,
}

/// A string that is no quantity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError;

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    }
}

const NANO: i128 = 1_000_000_000;

impl Quantity {
    /// The quantity `n` (a count), written as a plain decimal number.
    pub(crate) fn count(n: i64) -> Quantity {
        Quantity {
            nanos: i128::from(n) * NANO,
            format: Format::DecimalSi,
        }
    }

    /// Zero, in the decimal format.
    pub(crate) fn zero() -> Quantity {
        Quantity::count(0)
    }

    /// Parses `s` as apimachinery's `ParseQuantity` does.
    pub(crate) fn parse(s: &str) -> Result<Quantity, ParseError> {
        let s = s.trim();
        let (negative, rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(split);
        let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
            return Err(ParseError);
        }
        let (base, exponent, format) = parse_suffix(suffix)?;
        // The digits as an integer and a power of ten: value = digits * 10^(exponent - len(frac)).
        let digits: String = format!("{whole}{frac}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 30 {
            return Err(ParseError);
        }
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| ParseError)?
        };
        let mut ten_power = i64::from(exponent) - frac.len() as i64 + 9;
        let mut value = mantissa;
        if base == 2 {
            value = value
                .checked_mul(1i128 << exponent_bits(exponent))
                .ok_or(ParseError)?;
            ten_power = 9 - frac.len() as i64;
        }
        let nanos = scale_by_ten(value, ten_power).ok_or(ParseError)?;
        Ok(Quantity {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }

    /// The sum, in `self`'s format (or `other`'s when `self` is zero), as `Quantity.Add`.
    pub(crate) fn add(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// The difference, in `self`'s format.
    pub(crate) fn sub(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_sub(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// Whether the value is zero.
    pub(crate) fn is_zero(self) -> bool {
        self.nanos == 0
    }

    /// Whether the value is below zero.
    pub(crate) fn is_negative(self) -> bool {
        self.nanos < 0
    }

    /// The value in thousandths, rounded up (`Quantity.MilliValue`).
    pub(crate) fn milli_value(self) -> i128 {
        ceil_div(self.nanos, 1_000_000)
    }

    /// The canonical string, as `Quantity.String()`.
    pub(crate) fn canonical(self) -> String {
        if self.nanos == 0 {
            return "0".to_string();
        }
        let format = match self.format {
            Format::BinarySi if self.nanos.abs() < 1024 * NANO || self.nanos % NANO != 0 => {
                Format::DecimalSi
            }
            other => other,
        };
        let sign = if self.nanos < 0 { "-" } else { "" };
        let abs = self.nanos.unsigned_abs();
        if format == Format::BinarySi {
            let mut value = abs / NANO as u128;
            let mut exp = 0;
            while exp < 6 && value.is_multiple_of(1024) {
                value /= 1024;
                exp += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exp];
            return format!("{sign}{value}{suffix}");
        }
        // Strip trailing zeros, then bring the exponent down to a multiple of three.
        let mut mantissa = abs;
        let mut exponent: i32 = -9;
        while mantissa.is_multiple_of(10) {
            mantissa /= 10;
            exponent += 1;
        }
        while exponent.rem_euclid(3) != 0 {
            mantissa *= 10;
            exponent -= 1;
        }
        let suffix = match (format, exponent) {
            (_, 0) => String::new(),
            (Format::DecimalExponent, e) => format!("e{e}"),
            (_, -9) => "n".into(),
            (_, -6) => "u".into(),
            (_, -3) => "m".into(),
            (_, 3) => "k".into(),
            (_, 6) => "M".into(),
            (_, 9) => "G".into(),
            (_, 12) => "T".into(),
            (_, 15) => "P".into(),
            (_, 18) => "E".into(),
            (_, e) => format!("e{e}"),
        };
        format!("{sign}{mantissa}{suffix}")
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Quantity) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Quantity) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Quantity) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// The base (10 or 2), the exponent (of ten, or of two for binary suffixes) and format of a
/// suffix.
fn parse_suffix(suffix: &str) -> Result<(u32, i32, Format), ParseError> {
    let decimal = |e| Ok((10, e, Format::DecimalSi));
    let binary = |e| Ok((2, e, Format::BinarySi));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))
                .ok_or(ParseError)?;
            let digits = rest.trim_start_matches(['+', '-']);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ParseError);
            }
            let e: i32 = rest.parse().map_err(|_| ParseError)?;
            if !(-40..=40).contains(&e) {
                return Err(ParseError);
            }
            Ok((10, e, Format::DecimalExponent))
        }
    }
}

fn exponent_bits(exponent: i32) -> u32 {
    u32::try_from(exponent).unwrap_or(0)
}

/// `value * 10^power`, rounding up (away from zero) when `power` is negative.
fn scale_by_ten(value: i128, power: i64) -> Option<i128> {
    if power >= 0 {
        let factor = 10i128.checked_pow(u32::try_from(power).ok()?)?;
        return value.checked_mul(factor);
    }
    let divisor = 10i128.checked_pow(u32::try_from(-power).ok()?);
    Some(match divisor {
        Some(d) => ceil_div(value, d),
        None => i128::from(value != 0),
    })
}

fn ceil_div(value: i128, divisor: i128) -> i128 {
    let q = value / divisor;
    if value % divisor > 0 { q + 1 } else { q }
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    fn canon(s: &str) -> String {
        Quantity::parse(s).expect(s).canonical()
    }

    #[test]
    fn parses_and_prints_canonically() {
        for (input, want) in [
            ("0", "0"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("1000m", "1"),
            ("100m", "100m"),
            ("2000", "2k"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("512", "512"),
            ("1Ki", "1Ki"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("128974848", "128974848"),
            ("129e6", "129e6"),
            ("123Mi", "123Mi"),
            ("-5", "-5"),
            ("1n", "1n"),
            ("0.1n", "1n"),
            ("+3k", "3k"),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
    }

    #[test]
    fn refuses_what_is_no_quantity() {
        for bad in ["", "abc", "1.2.3", "1Xi", "1e", "e3", ".", "1 Gi", "--1"] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn adds_in_the_first_operands_format() {
        let a = Quantity::parse("1Gi").unwrap();
        let b = Quantity::parse("512Mi").unwrap();
        assert_eq!(a.add(b).canonical(), "1536Mi");
        let cpu = Quantity::parse("100m")
            .unwrap()
            .add(Quantity::parse("1").unwrap());
        assert_eq!(cpu.canonical(), "1100m");
        let from_zero = Quantity::zero().add(Quantity::parse("1Gi").unwrap());
        assert_eq!(from_zero.canonical(), "1Gi");
        assert_eq!(
            Quantity::parse("1")
                .unwrap()
                .sub(Quantity::parse("250m").unwrap())
                .canonical(),
            "750m"
        );
    }

    #[test]
    fn compares_values_across_formats() {
        assert_eq!(
            Quantity::parse("1Ki").unwrap(),
            Quantity::parse("1024").unwrap()
        );
        assert!(Quantity::parse("999m").unwrap() < Quantity::parse("1").unwrap());
        assert!(Quantity::parse("1G").unwrap() < Quantity::parse("1Gi").unwrap());
        assert_eq!(Quantity::parse("1500m").unwrap().milli_value(), 1500);
    }
}
