//! What a sandboxed command may touch: the directories it may write (the project, the temp
//! directories, any extra ones from a trusted configuration file) and whether it may use the
//! network. The paths inside the project no command may change are in `protected`.

use std::path::{Path, PathBuf};

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
    /// The project root (writable, except its protected paths).
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
    fn writable_directories() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        let project = root.join("project");
        std::fs::create_dir_all(&project).expect("mkdir");
        let tmp = root.join("tmp");
        std::fs::create_dir(&tmp).expect("mkdir");
        let policy = Policy::new(
            &project,
            &[tmp.clone(), root.join("missing")],
            std::slice::from_ref(&project),
            Network::Off,
        );
        assert_eq!(policy.writable, [project, tmp]);
    }
}
