//! `ALL` and `LABELS` for an enum of kinds whose `label` is a `const fn`: every kind in
//! declaration order, and each one's label in that order, the names a report may show and
//! an expectation may name. Written once here for each enum that has them.

/// Inside `impl $ty`: `pub const ALL: [$ty; N]` of the variants given, and
/// `pub const LABELS: [&str; N]` made from `$ty::label`.
macro_rules! kinds_and_labels {
    ($ty:ident, [$($variant:ident),+ $(,)?]) => {
        /// Every kind, in declaration order.
        pub const ALL: [$ty; [$($ty::$variant),+].len()] = [$($ty::$variant),+];

        #[doc = concat!("Every kind's [`", stringify!($ty), "::label`], in the order of [`", stringify!($ty), "::ALL`]: the names a report may show (and an expectation may name).")]
        pub const LABELS: [&'static str; Self::ALL.len()] = {
            let mut out = [""; Self::ALL.len()];
            let mut i = 0;
            while i < Self::ALL.len() {
                out[i] = Self::ALL[i].label();
                i += 1;
            }
            out
        };
    };
}

pub(crate) use kinds_and_labels;
