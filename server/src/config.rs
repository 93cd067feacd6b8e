//! `larik config`: the configuration of the current directory's project, every setting with
//! where it comes from, as `/config` shows it in every front end; `larik config set KEY
//! VALUE` changes the personal `config.json`.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::ConfigAction;
use crate::control;

/// Prints the configuration, or sets one value and says what was done.
pub fn run(action: Option<ConfigAction>) -> anyhow::Result<ExitCode> {
    let env = crate::assembly::environment();
    let cwd = std::env::current_dir()?;
    let text = match action {
        None => control::config_text(&env, &cwd),
        Some(ConfigAction::Set { key, value }) => {
            match control::set_config(&env, &cwd, &key, &value) {
                Ok(text) => text,
                Err(error) => {
                    eprintln!("larik: {error}");
                    return Ok(ExitCode::from(2));
                }
            }
        }
    };
    writeln!(std::io::stdout().lock(), "{text}")?;
    Ok(ExitCode::SUCCESS)
}
