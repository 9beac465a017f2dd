//! HdrHistogram-backed percentiles (ms).

use hdrhistogram::Histogram;
use stampede_reports::Percentiles;

/// A latency-like distribution in ms, three significant digits.
#[derive(Debug, Clone)]
pub struct Distribution {
    hist: Histogram<u64>,
}

impl Default for Distribution {
    fn default() -> Self {
        // Auto-resizing, so no value is ever refused; 3 significant digits.
        let mut hist =
            Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits is valid"));
        hist.auto(true);
        Self { hist }
    }
}

impl Distribution {
    /// Adds one value (ms).
    pub fn record(&mut self, ms: u64) {
        // Auto-resize makes recording infallible for every u64 the run can produce.
        let _ = self.hist.record(ms);
    }

    /// How many values were recorded.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// One quantile (0..=1) in ms; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.value_at_quantile(q)
        }
    }

    /// p50, p95, p99 and max (ms).
    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            p50: self.quantile(0.50),
            p95: self.quantile(0.95),
            p99: self.quantile(0.99),
            max: if self.hist.is_empty() {
                0
            } else {
                self.hist.max()
            },
        }
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.hist.reset();
    }
}
