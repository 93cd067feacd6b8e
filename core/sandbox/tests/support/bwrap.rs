//! Finding bubblewrap for the sandbox tests: from the test's PATH, failing the test when it
//! is missing (`tests/run` installs it).

use std::path::PathBuf;

pub fn bwrap() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file())
        .expect("bubblewrap is not installed: run tests/run, or apt-get install bubblewrap")
}
