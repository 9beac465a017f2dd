//! Retries per 100 ms, counted from the run's `attempts.csv`.
//!
//! A fixed-sleep client's retry waves are sub-second: 48 workers that all sleep 1 s after a
//! 429 come back within one 100 ms slice, then nothing for 900 ms. At the run's 1 s buckets
//! that reads as a flat 48 retries/s; only a finer bin shows the comb. The time buckets in
//! `RunReport` are too coarse, but the run directory already holds one row per attempt.

use std::path::Path;

use serde::Deserialize;

/// Width of one fine bin (ms).
pub(crate) const FINE_BIN_MS: u64 = 100;

/// Width of the window the fine panel shows (ms).
pub(crate) const WINDOW_MS: u64 = 30_000;

/// Retries per 100 ms over a whole run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FineRetries {
    /// Retries (attempts after the first of their logical request, as the provider
    /// identified it: the `logical_attempt` column) in bin `i` = [i*100, (i+1)*100) ms.
    pub bins: Vec<u64>,
}

/// The two columns of `attempts.csv` this needs; serde skips the others.
#[derive(Deserialize)]
struct AttemptTime {
    at_ms: u64,
    logical_attempt: u32,
}

impl FineRetries {
    /// Reads `attempts.csv` at `path`. `None` when the file is missing or unreadable, or
    /// when its row count differs from `outbound_attempts` (a file left by another run):
    /// the panel is an extra, and a wrong one is worse than none.
    pub(crate) fn from_attempts_csv(path: &Path, outbound_attempts: u64) -> Option<Self> {
        let mut reader = csv::Reader::from_path(path).ok()?;
        let mut bins: Vec<u64> = Vec::new();
        let mut rows = 0u64;
        for row in reader.deserialize::<AttemptTime>() {
            let row = row.ok()?;
            rows += 1;
            if row.logical_attempt > 1 {
                let i = usize::try_from(row.at_ms / FINE_BIN_MS).ok()?;
                if i >= bins.len() {
                    bins.resize(i + 1, 0);
                }
                bins[i] += 1;
            }
        }
        (rows == outbound_attempts).then_some(FineRetries { bins })
    }

    /// Start (ms) of the window to show: 10 s before the busiest bin (the earliest on ties),
    /// on a whole second, so the waves leading up to the peak show too; 0 without retries.
    pub(crate) fn window_start_ms(&self) -> u64 {
        let peak = self
            .bins
            .iter()
            .enumerate()
            .fold(
                (0usize, 0u64),
                |best, (i, n)| {
                    if *n > best.1 {
                        (i, *n)
                    } else {
                        best
                    }
                },
            );
        if peak.1 == 0 {
            return 0;
        }
        let peak_ms = peak.0 as u64 * FINE_BIN_MS;
        (peak_ms.saturating_sub(10_000) / 1000) * 1000
    }

    /// Retries per bin for bins starting in `[start_ms, start_ms + WINDOW_MS)`, as
    /// (bin start ms, retries); bins past the run's last retry count as 0.
    pub(crate) fn window(&self, start_ms: u64, end_ms: u64) -> Vec<(u64, u64)> {
        let first = start_ms / FINE_BIN_MS;
        let last = end_ms.min(start_ms + WINDOW_MS).div_ceil(FINE_BIN_MS);
        (first..last.max(first + 1))
            .map(|i| {
                let n = usize::try_from(i)
                    .ok()
                    .and_then(|i| self.bins.get(i))
                    .copied()
                    .unwrap_or(0);
                (i * FINE_BIN_MS, n)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rows: &[(u64, u32)]) -> std::path::PathBuf {
        let path = dir.join("attempts.csv");
        let mut text = String::from("seq,at_ms,done_ms,tenant,logical_attempt,outcome\n");
        for (i, (at, no)) in rows.iter().enumerate() {
            text.push_str(&format!("{i},{at},{at},t,{no},429\n"));
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn retries_are_binned_per_100_ms_and_first_attempts_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            &[(0, 1), (50, 1), (1005, 2), (1099, 3), (1100, 2)],
        );
        let fine = FineRetries::from_attempts_csv(&path, 5).unwrap();
        assert_eq!(fine.bins.len(), 12);
        assert_eq!(fine.bins[10], 2);
        assert_eq!(fine.bins[11], 1);
        assert_eq!(fine.bins.iter().sum::<u64>(), 3);
    }

    #[test]
    fn a_file_from_another_run_or_none_at_all_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        assert!(FineRetries::from_attempts_csv(&dir.path().join("attempts.csv"), 0).is_none());
        let path = write(dir.path(), &[(0, 1), (1000, 2)]);
        assert!(FineRetries::from_attempts_csv(&path, 3).is_none());
        assert!(FineRetries::from_attempts_csv(&path, 2).is_some());
    }

    #[test]
    fn the_window_opens_ten_seconds_before_the_busiest_bin() {
        let mut bins = vec![0; 600];
        bins[155] = 7; // 15.5 s
        bins[400] = 9; // 40 s: the peak
        bins[450] = 9; // as high, later: not chosen
        let fine = FineRetries { bins };
        assert_eq!(fine.window_start_ms(), 30_000);
        let w = fine.window(30_000, 1_000_000);
        assert_eq!(w.len(), 300);
        assert_eq!(w[100], (40_000, 9));
        // A run shorter than the window shows only the run.
        assert_eq!(fine.window(0, 2_050).len(), 21);
        assert_eq!(FineRetries { bins: vec![0; 5] }.window_start_ms(), 0);
    }
}
