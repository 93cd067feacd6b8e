//! The tool lists of servers that start on first use (`lazy`), kept under the data
//! directory in one file (`mcp-tools.json`, by `<name>-<hash of the definition>`) each time
//! such a server lists its tools, so a later session can offer its tools before starting
//! it: one file read however many servers there are. A changed definition has another
//! entry; entries not written for 30 days are dropped at the next write; a file or entry
//! that cannot be read is no cache. Writes replace the file whole (see `files`); two
//! processes writing at once may lose one's entry, which costs a start.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use larik_protocol::sync::locked;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::files::{Fnv1a, write_atomically};
use crate::listing::{ListedTool, list_text, parse_list};
use crate::naming::sanitize;
use crate::spec::ServerSpec;

/// How long an entry nobody wrote again is kept.
const KEEP_SECONDS: u64 = 30 * 24 * 3600;

/// One kept list.
#[derive(Serialize, Deserialize)]
struct Entry {
    /// When it was written (seconds since the epoch).
    written: u64,
    tools: Box<RawValue>,
}

/// Where the tool lists are kept.
#[derive(Clone)]
pub(crate) struct ToolCache(Arc<Inner>);

struct Inner {
    path: PathBuf,
    /// The file's entries, read at the first look.
    entries: Mutex<Option<HashMap<String, Entry>>>,
}

impl ToolCache {
    /// The cache in the file at `path`.
    pub(crate) fn new(path: PathBuf) -> Self {
        ToolCache(Arc::new(Inner {
            path,
            entries: Mutex::new(None),
        }))
    }

    /// The entry name of `spec`'s server.
    fn key(spec: &ServerSpec) -> String {
        let mut hasher = Fnv1a::default();
        spec.hash(&mut hasher);
        format!("{}-{:016x}", sanitize(&spec.name), hasher.finish())
    }

    /// The entries of the file as it is now (none when it cannot be read).
    fn load(path: &Path) -> HashMap<String, Entry> {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// The tools `spec`'s server listed last time, if kept.
    pub(crate) fn read(&self, spec: &ServerSpec) -> Option<Vec<ListedTool>> {
        let mut entries = locked(&self.0.entries);
        let entries = entries.get_or_insert_with(|| Self::load(&self.0.path));
        parse_list(entries.get(&Self::key(spec))?.tools.get())
    }

    /// Keeps `tools` for `spec`'s server; a cache that cannot be written only costs the
    /// next session a start.
    pub(crate) fn write(&self, spec: &ServerSpec, tools: &[ListedTool]) -> Result<(), String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|since| since.as_secs())
            .unwrap_or_default();
        let tools = RawValue::from_string(list_text(tools)?).map_err(|error| error.to_string())?;
        let mut held = locked(&self.0.entries);
        // Read again: another process may have kept lists since.
        let mut entries = Self::load(&self.0.path);
        entries.retain(|_, entry| now.saturating_sub(entry.written) < KEEP_SECONDS);
        entries.insert(
            Self::key(spec),
            Entry {
                written: now,
                tools,
            },
        );
        let text = serde_json::to_string(&entries).map_err(|error| error.to_string())?;
        write_atomically(&self.0.path, text.as_bytes()).map_err(|error| error.to_string())?;
        *held = Some(entries);
        Ok(())
    }
}
