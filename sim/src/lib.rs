//! stampede-sim: scenario format, workload, virtual and live drivers, measurement.
