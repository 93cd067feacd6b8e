//! A stand-in for the user's browser in logins: a `BROWSER` program that opens the URL it
//! is given the way a browser would.

use std::path::PathBuf;

/// The `BROWSER` variable naming [`browser_script`], written into `dir`.
pub fn browser_env(dir: &std::path::Path) -> (String, String) {
    ("BROWSER".into(), browser_script(dir).display().to_string())
}

/// A `BROWSER` program for tests: it opens the URL it is given the way a browser would,
/// following the redirects (the testkit's authorization server consents at once) back to
/// Larik's redirect listener. Written into `dir`; its path.
fn browser_script(dir: &std::path::Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("test-browser");
    std::fs::write(
        &path,
        "#!/bin/sh\nexec python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=60).read()' \"$1\"\n",
    )
    .expect("the browser script is written");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}
