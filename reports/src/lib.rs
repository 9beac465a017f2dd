//! stampede-reports: the run report schema that `stampede-sim` fills, and its renderers.

pub mod schema;

pub use schema::{AttemptRow, Expectation, Percentiles, Summary, TenantRow, TimeseriesRow};
