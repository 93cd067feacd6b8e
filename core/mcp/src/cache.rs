//! The tool lists of servers that start on first use (`lazy`), kept under the data
//! directory (`mcp-tools/<name>-<hash of the definition>.json`) each time such a server
//! lists its tools, so a later session can offer its tools before starting it. A changed
//! definition has another file; a file that cannot be read or is not a list is no cache.

use std::path::{Path, PathBuf};

use std::hash::{Hash, Hasher};

use crate::listing::{ListedTool, list_text, parse_list};
use crate::naming::sanitize;
use crate::spec::ServerSpec;

/// Where the tool lists are kept.
#[derive(Debug, Clone)]
pub(crate) struct ToolCache {
    dir: PathBuf,
}

impl ToolCache {
    /// The cache in `dir`.
    pub(crate) fn new(dir: PathBuf) -> Self {
        ToolCache { dir }
    }

    fn path(&self, spec: &ServerSpec) -> PathBuf {
        let mut hasher = Fnv1a::default();
        spec.hash(&mut hasher);
        let hash = hasher.finish();
        self.dir
            .join(format!("{}-{hash:016x}.json", sanitize(&spec.name)))
    }

    /// The tools `spec`'s server listed last time, if kept.
    pub(crate) fn read(&self, spec: &ServerSpec) -> Option<Vec<ListedTool>> {
        let text = std::fs::read_to_string(self.path(spec)).ok()?;
        parse_list(&text)
    }

    /// Keeps `tools` for `spec`'s server; a cache that cannot be written only costs the
    /// next session a start.
    pub(crate) fn write(&self, spec: &ServerSpec, tools: &[ListedTool]) -> Result<(), String> {
        let path = self.path(spec);
        let text = list_text(tools)?;
        write_atomically(&self.dir, &path, &text).map_err(|error| error.to_string())
    }
}

/// The 64-bit FNV-1a hash as a [`Hasher`]: the same in every run, unlike the standard
/// library's seeded one, so a kept list is found again by the next process.
pub(crate) struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Writes `text` to `path` through a temporary file in `dir`, so a reader never sees half.
fn write_atomically(dir: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path)
}
