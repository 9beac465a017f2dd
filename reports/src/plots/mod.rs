//! Plots (SVG, drawn with plotters; PNG rasterised from the SVG on request): the run's plots
//! and the sweep's plots, on one shared chart frame.

pub(crate) mod attempts_plot;
pub(crate) mod chart;
pub(crate) mod downsample;
pub(crate) mod fine_retries;
pub(crate) mod hover;
#[cfg(feature = "png")]
pub(crate) mod raster;
pub(crate) mod run_plots;
pub(crate) mod series_tag;
pub(crate) mod sweep_plots;
pub(crate) mod y_scale;
