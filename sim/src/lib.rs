//! stampede-sim: scenario format, workload, virtual and live drivers, measurement.

#![deny(missing_docs)]

pub mod client_process;
pub(crate) mod driver_common;
pub mod live_driver;
pub mod measure;
pub mod progress;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod sdk_client;
pub mod signals;
pub mod sink;
pub mod staging;
pub mod virtual_driver;
pub mod workload;
