//! Exit codes of the command (CONTRACT.md): 0 every expectation held, 1 an expectation
//! failed, 2 the scenario, a flag or a file is wrong.

use std::process::ExitCode;

/// Every expectation held.
pub const PASSED: u8 = 0;
/// An expectation failed.
pub const EXPECTATION_FAILED: u8 = 1;
/// The scenario, a flag or a file is wrong.
pub const BAD_INPUT: u8 = 2;

/// Prints `message` as an error and returns exit code 2.
pub fn bad_input(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(BAD_INPUT)
}
