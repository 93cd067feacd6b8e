//! Entry points for the fuzz targets in `core/fuzz`, compiled only with the `fuzzing`
//! feature: Larik's ACP and LSP front ends served in-process ([`fronts`]), and what the
//! hooks extension makes of hooks' replies at each event ([`hooks`]).

pub mod fronts;
pub mod hooks;
