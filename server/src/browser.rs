//! Opening a URL in the user's browser, for logins: the program `$BROWSER` names (the
//! first of a colon-separated list; `%s` in it stands for the URL, else the URL is its
//! last argument), else `xdg-open` when a display is available (`open` on macOS). The
//! program is started detached and not waited for; nothing opens without one.

use larik_config::Environment;

/// Starts a browser on `url`; the program started, or `None` when there is none to start.
pub fn open(url: &str, env: &Environment) -> Option<String> {
    let (program, args) = command(url, env)?;
    let started = tokio::process::Command::new(&program)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(false)
        .spawn();
    // Dropped unwaited: the runtime reaps it when it exits.
    started.ok().map(|_| program)
}

/// The program and arguments that open `url`.
fn command(url: &str, env: &Environment) -> Option<(String, Vec<String>)> {
    if let Some(browser) = env.get("BROWSER").and_then(|list| {
        list.split(':')
            .map(str::trim)
            .find(|entry| !entry.is_empty())
    }) {
        let mut words: Vec<String> = browser.split_whitespace().map(str::to_string).collect();
        if words.iter().any(|word| word.contains("%s")) {
            for word in &mut words {
                *word = word.replace("%s", url);
            }
        } else {
            words.push(url.to_string());
        }
        let program = words.remove(0);
        return Some((program, words));
    }
    if cfg!(target_os = "macos") {
        return Some(("open".to_string(), vec![url.to_string()]));
    }
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| env.get(name).is_some_and(|value| !value.is_empty()));
    display.then(|| ("xdg-open".to_string(), vec![url.to_string()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browser_variable_wins_and_without_a_display_nothing_opens() {
        let url = "http://127.0.0.1:9/authorize?x=1";
        let env =
            Environment::from_pairs([("BROWSER", "firefox --new-tab:lynx"), ("DISPLAY", ":0")]);
        assert_eq!(
            command(url, &env),
            Some(("firefox".into(), vec!["--new-tab".into(), url.into()]))
        );
        let env = Environment::from_pairs([("BROWSER", "w3m %s -dump")]);
        assert_eq!(
            command(url, &env),
            Some(("w3m".into(), vec![url.into(), "-dump".into()]))
        );
        let env = Environment::from_pairs([("DISPLAY", ":0")]);
        assert_eq!(
            command(url, &env),
            Some(("xdg-open".into(), vec![url.into()]))
        );
        assert_eq!(
            command(url, &Environment::from_pairs([("HOME", "/h")])),
            None
        );
    }
}
