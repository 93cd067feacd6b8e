//! Builds, unit-tests and packages the VS Code extension in `editors/vscode`: runs its
//! `setup` (pinned npm packages), then `npm run compile` (strict `tsc`), `npm test` (Node's
//! test runner on the compiled message handling) and `npm run package` (vsce, into a temp
//! dir so the tree stays clean), and checks that a real `.vsix` came out.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The extension's folder in the checkout.
fn extension_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("editors")
        .join("vscode")
}

/// Runs `program args` in the extension's folder and fails the test, showing both output
/// streams, unless it succeeds.
fn run(program: &str, args: &[&str]) -> Output {
    let output = Command::new(program)
        .args(args)
        .current_dir(extension_dir())
        .output()
        .unwrap_or_else(|error| panic!("could not run {program}: {error}"));
    assert!(
        output.status.success(),
        "`{program} {}` failed with {}\n--- stdout\n{}\n--- stderr\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    output
}

#[test]
fn the_extension_compiles_passes_its_unit_tests_and_packages_into_a_vsix() {
    let setup = extension_dir().join("setup");
    run(setup.to_str().expect("the checkout path is UTF-8"), &[]);

    run("npm", &["run", "compile"]);
    assert!(
        extension_dir().join("out/extension.js").is_file(),
        "tsc wrote no out/extension.js"
    );

    let tests = run("npm", &["test"]);
    let report = String::from_utf8_lossy(&tests.stdout);
    assert!(
        report.lines().any(|line| line == "# fail 0"),
        "node --test reported failures:\n{report}"
    );
    let passed = report
        .lines()
        .find_map(|line| line.strip_prefix("# pass "))
        .and_then(|count| count.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(passed > 0, "node --test ran no test:\n{report}");

    let out = tempfile::tempdir().expect("temp dir");
    let vsix = out.path().join("larik.vsix");
    run(
        "npm",
        &[
            "run",
            "package",
            "--",
            "--out",
            vsix.to_str().expect("temp paths are UTF-8"),
        ],
    );
    let bytes = std::fs::read(&vsix).expect("vsce wrote the .vsix");
    assert!(bytes.starts_with(b"PK\x03\x04"), "the .vsix is not a zip");
    // Zip entry names are stored uncompressed: the entry point and the language client
    // the extension loads at run time must be inside.
    for entry in [
        "extension/package.json",
        "extension/out/extension.js",
        "extension/out/core/chatModel.js",
        "extension/media/chat.js",
        "extension/node_modules/vscode-languageclient/package.json",
    ] {
        assert!(
            bytes
                .windows(entry.len())
                .any(|window| window == entry.as_bytes()),
            "{entry} is missing from the .vsix"
        );
    }
    for left_out in ["extension/src/", "extension/out/test/"] {
        assert!(
            !bytes
                .windows(left_out.len())
                .any(|window| window == left_out.as_bytes()),
            "{left_out} was packaged"
        );
    }
}
