//! The `larik` binary: Larik with its own extensions and no others (see the library,
//! [`larik_server::run`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    larik_server::run(Vec::new())
}
