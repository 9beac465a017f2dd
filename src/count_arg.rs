//! Counts given on the command line that must be at least 1 (`--jobs`, `--seeds`): clap's
//! own parser for a `NonZero` type says "number would be zero for non-zero type", which
//! names a Rust type instead of saying what to write.

use std::str::FromStr;

/// Parses `text` as a whole number of 1 or more into `T` (a `NonZero` integer), for clap's
/// `value_parser`; the error says what to give.
pub fn at_least_one<T: FromStr>(text: &str) -> Result<T, String> {
    let Ok(n) = text.parse::<u64>() else {
        return Err("give a whole number, 1 or more".to_string());
    };
    if n == 0 {
        return Err("must be at least 1".to_string());
    }
    text.parse::<T>()
        .map_err(|_| format!("{n} is more than this option takes"))
}

#[cfg(test)]
mod tests {
    use std::num::{NonZeroU32, NonZeroUsize};

    use super::at_least_one;

    #[test]
    fn a_count_below_one_or_not_a_number_says_what_to_give() {
        assert_eq!(
            at_least_one::<NonZeroU32>("3"),
            Ok(NonZeroU32::new(3).unwrap())
        );
        assert_eq!(
            at_least_one::<NonZeroUsize>("1"),
            Ok(NonZeroUsize::new(1).unwrap())
        );
        assert_eq!(
            at_least_one::<NonZeroU32>("0"),
            Err("must be at least 1".to_string())
        );
        assert_eq!(
            at_least_one::<NonZeroU32>("-2"),
            Err("give a whole number, 1 or more".to_string())
        );
        assert_eq!(
            at_least_one::<NonZeroU32>("4294967296"),
            Err("4294967296 is more than this option takes".to_string())
        );
    }
}
