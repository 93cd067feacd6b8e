//! `larik approve`: the loosening settings of this repository's shared files that count
//! only once the user approves their exact value, listed with their values; approving
//! pins each to a hash of that value in the user's personal settings for the project.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};

/// Lists the pending approvals of the project in the current directory, or approves the
/// given keys (or all).
pub fn run(keys: &[String], all: bool) -> anyhow::Result<ExitCode> {
    let env = crate::assembly::environment();
    let cwd = std::env::current_dir()?;
    let context = env.config_context(&cwd);
    let Some(config_dir) = context.config_dir.clone() else {
        bail!("no personal config directory to keep approvals in: set XDG_CONFIG_HOME or HOME");
    };
    let loaded = larik_config::load(&context);
    let pending = &loaded.pending_approvals;
    let mut out = std::io::stdout().lock();
    if keys.is_empty() && !all {
        if pending.is_empty() {
            writeln!(
                out,
                "Nothing waits for approval in {}.",
                context.project_root.display()
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        for approval in pending {
            let changed = if approval.stale {
                " (changed since you approved it)"
            } else {
                ""
            };
            writeln!(
                out,
                "{}{changed}\n    {}",
                approval.approval_key(),
                approval.value
            )?;
        }
        writeln!(
            out,
            "Approve with `larik approve KEY...` or `larik approve --all`."
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let unknown: Vec<&String> = keys
        .iter()
        .filter(|key| {
            !pending
                .iter()
                .any(|approval| approval.approval_key() == **key)
        })
        .collect();
    if !unknown.is_empty() {
        bail!(
            "not waiting for approval: {} (run `larik approve` to list what is)",
            unknown
                .iter()
                .map(|key| key.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for approval in pending
        .iter()
        .filter(|approval| all || keys.contains(&approval.approval_key()))
    {
        larik_config::approve_pending(&config_dir, &context.project_root, approval)
            .with_context(|| format!("approving {}", approval.approval_key()))?;
        writeln!(
            out,
            "Approved {} = {}",
            approval.approval_key(),
            approval.value
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
