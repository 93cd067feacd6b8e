//! What a sandboxed command may touch: the directories it may write (the project, the temp
//! directories, any extra ones from a trusted configuration file), the paths inside the
//! project bound read-only again because writing them would reach outside the sandbox later
//! (git hooks and configuration run by the user's own git; Larik's and Claude Code's project
//! settings; the MCP server list), and whether it may use the network.

use std::path::{Path, PathBuf};

/// Paths inside the project that stay read-only even though the project is writable:
/// `git` runs hooks and reads its configuration (which may name programs, or point at other
/// configuration) outside any sandbox, and the settings files decide what Larik and other
/// agents may do.
pub const PROTECTED_PATHS: [&str; 9] = [
    ".git/hooks",
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/info",
    ".git/modules",
    ".larik",
    ".claude",
    ".mcp.json",
];

/// How much network a sandboxed command gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// None: no connection leaves the sandbox.
    Off,
    /// Connections to these TCP ports only (enforced by Landlock; bubblewrap can only
    /// give all or nothing, and gives all).
    TcpPorts(Vec<u16>),
    /// All of it.
    All,
}

impl Network {
    /// The network for a list of allowed hosts from the configuration (`host`,
    /// `host:port`): nothing when empty; the listed ports when every entry names one;
    /// everything when one names none.
    pub fn from_allowed(hosts: &[String]) -> Self {
        if hosts.is_empty() {
            return Network::Off;
        }
        let ports: Option<Vec<u16>> = hosts
            .iter()
            .map(|host| {
                host.rsplit_once(':')
                    .and_then(|(_, port)| port.parse().ok())
            })
            .collect();
        match ports {
            Some(mut ports) => {
                ports.sort_unstable();
                ports.dedup();
                Network::TcpPorts(ports)
            }
            None => Network::All,
        }
    }
}

/// Everything a sandbox enforces for one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The project root (writable, with its protected paths read-only).
    pub project_root: PathBuf,
    /// Every writable directory: the project root first, then the others. Existing
    /// directories only, made canonical.
    pub writable: Vec<PathBuf>,
    /// The network.
    pub network: Network,
}

impl Policy {
    /// A policy for `project_root` with the temp directories and any extra writable
    /// paths; directories that do not exist are left out.
    pub fn new(
        project_root: &Path,
        temp_dirs: &[PathBuf],
        extra_writable: &[PathBuf],
        network: Network,
    ) -> Self {
        let project_root = project_root
            .canonicalize()
            .unwrap_or_else(|_| project_root.to_path_buf());
        let mut writable = vec![project_root.clone()];
        for dir in temp_dirs.iter().chain(extra_writable) {
            if let Ok(dir) = dir.canonicalize()
                && dir.is_dir()
                && !writable.contains(&dir)
            {
                writable.push(dir);
            }
        }
        Self {
            project_root,
            writable,
            network,
        }
    }

    /// The protected paths that exist right now (a repository may be created or a
    /// settings directory added between two commands, so this is asked per command). A
    /// `.git` that is a file (a worktree or submodule pointing at its repository) is
    /// protected itself.
    pub fn protected_now(&self) -> Vec<PathBuf> {
        let root = &self.project_root;
        let mut protected = Vec::new();
        let git = root.join(".git");
        if git.symlink_metadata().is_ok_and(|meta| meta.is_file()) {
            protected.push(git);
        }
        for relative in PROTECTED_PATHS {
            let path = root.join(relative);
            if path.symlink_metadata().is_ok() {
                protected.push(path);
            }
        }
        protected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_hosts_decide_the_network() {
        assert_eq!(Network::from_allowed(&[]), Network::Off);
        let hosts = |items: &[&str]| {
            items
                .iter()
                .map(|item| item.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            Network::from_allowed(&hosts(&["crates.example:443", "localhost:8080", "x:443"])),
            Network::TcpPorts(vec![443, 8080])
        );
        assert_eq!(
            Network::from_allowed(&hosts(&["crates.example:443", "mirror.example"])),
            Network::All
        );
    }

    #[test]
    fn writable_directories_and_protected_paths() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        let project = root.join("project");
        std::fs::create_dir_all(project.join(".git/hooks")).expect("mkdir");
        std::fs::write(project.join(".git/config"), "").expect("write");
        std::fs::write(project.join(".mcp.json"), "{}").expect("write");
        let tmp = root.join("tmp");
        std::fs::create_dir(&tmp).expect("mkdir");
        let policy = Policy::new(
            &project,
            &[tmp.clone(), root.join("missing")],
            std::slice::from_ref(&project),
            Network::Off,
        );
        assert_eq!(policy.writable, [project.clone(), tmp]);
        assert_eq!(
            policy.protected_now(),
            [
                project.join(".git/hooks"),
                project.join(".git/config"),
                project.join(".mcp.json")
            ]
        );
        std::fs::create_dir(project.join(".larik")).expect("mkdir");
        assert!(policy.protected_now().contains(&project.join(".larik")));
    }
}
