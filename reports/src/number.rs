//! Stable number formatting: every figure that reaches a report goes through here, so the
//! same input gives the same bytes on every machine (no locale, no shortest-round-trip
//! surprises, no `-0`).

/// Formats `x` with exactly `decimals` digits after the point. Negative zero prints as zero;
/// NaN prints as `n/a` and infinities as `inf` / `-inf`, so a broken figure is visible rather
/// than a panic.
pub fn fmt_num(x: f64, decimals: usize) -> String {
    if x.is_nan() {
        return "n/a".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let s = format!("{x:.decimals$}");
    // `-0.00` after rounding a tiny negative number: print it as zero.
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        return s[1..].to_string();
    }
    s
}

/// Formats `x` like `fmt_num`, with a comma between each group of three digits before the
/// point (`10,611`, `1,234.5`), for numbers a reader takes in at a glance.
pub fn fmt_grouped(x: f64, decimals: usize) -> String {
    let plain = fmt_num(x, decimals);
    let (sign, rest) = match plain.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", plain.as_str()),
    };
    let (whole, fraction) = match rest.find('.') {
        Some(dot) => rest.split_at(dot),
        None => (rest, ""),
    };
    if !whole.bytes().all(|b| b.is_ascii_digit()) {
        return plain;
    }
    let mut grouped = String::with_capacity(plain.len() + whole.len() / 3);
    grouped.push_str(sign);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped.push_str(fraction);
    grouped
}

/// Formats a figure that may be a count or a ratio: whole numbers without decimals, others
/// with three (e.g. `12`, `1.125`).
pub fn fmt_figure(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        fmt_num(x, 0)
    } else {
        fmt_num(x, 3)
    }
}

/// Formats an expectation's measured figure: a whole number as [`fmt_figure`] does, any
/// other with every decimal it holds (a run keeps 4, and more where 4 would read as the
/// limit itself): three decimals made a failure of 5.13097 read `actual 5.131, limit >=
/// 5.131`, and one of 0.20289 read as passing `>= 0.2029`.
pub fn fmt_actual(x: f64) -> String {
    if x.is_finite() && x.fract() != 0.0 {
        format!("{x}")
    } else {
        fmt_figure(x)
    }
}

/// Median of `values` (mean of the two middle values for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_decimals_and_no_negative_zero() {
        assert_eq!(fmt_num(1.0, 2), "1.00");
        assert_eq!(fmt_num(2.0 / 3.0, 3), "0.667");
        assert_eq!(fmt_num(-0.0001, 2), "0.00");
        assert_eq!(fmt_num(-1.5, 1), "-1.5");
        assert_eq!(fmt_num(f64::NAN, 2), "n/a");
        assert_eq!(fmt_num(f64::NEG_INFINITY, 2), "-inf");
    }

    #[test]
    fn grouped_numbers_have_a_comma_every_three_digits() {
        assert_eq!(fmt_grouped(10_611.0, 0), "10,611");
        assert_eq!(fmt_grouped(999.0, 0), "999");
        assert_eq!(fmt_grouped(1_234_567.4, 1), "1,234,567.4");
        assert_eq!(fmt_grouped(-4_501.5, 1), "-4,501.5");
        assert_eq!(fmt_grouped(0.5, 2), "0.50");
        assert_eq!(fmt_grouped(f64::NAN, 0), "n/a");
    }

    #[test]
    fn figures_drop_decimals_only_for_whole_numbers() {
        assert_eq!(fmt_figure(42.0), "42");
        assert_eq!(fmt_figure(1.125), "1.125");
        assert_eq!(fmt_figure(-0.0), "0");
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
