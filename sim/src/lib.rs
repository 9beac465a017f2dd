//! stampede-sim: scenario format, workload, virtual and live drivers, measurement.

pub mod rng;
pub mod scenario;
pub mod workload;
