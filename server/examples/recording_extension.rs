//! `larik` with one extra extension, for the front-end tests: a loop hook that writes a
//! line for every point of the loop it reaches and denies calls of one tool, a prompt
//! command, and a system-prompt section. It shows that an extension registered once takes
//! part in `larik -p`, `larik acp` and `larik lsp` alike.
//!
//! `LARIK_RECORDING_LOG` names the file the hook appends to (one JSON object per line:
//! `{"point": …, "session": …, "tool": …}`); `LARIK_RECORDING_DENY` names a tool whose
//! calls the hook denies. The command is `/greet NAME`, a prompt asking to greet NAME.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use larik_agent::hooks::{
    CompactOutcome, CompactPoint, CompactedPoint, HookDecision, LoopContext, LoopHook,
    PromptOutcome, PromptPoint, StopOutcome, StopPoint, ToolCallOutcome, ToolCallPoint,
    ToolResultOutcome, ToolResultPoint,
};
use larik_server::{CommandSpec, Contributions, Extension, Scope, SetupError};
use serde_json::json;

/// The text the extension adds to every system prompt.
const PROMPT_SECTION: &str = "The recording extension is present.";

fn main() -> ExitCode {
    let hook = Arc::new(RecordingHook {
        log: std::env::var_os("LARIK_RECORDING_LOG").map(PathBuf::from),
        deny: std::env::var("LARIK_RECORDING_DENY").ok(),
        writing: Mutex::new(()),
    });
    larik_server::run(vec![Arc::new(Recording { hook })])
}

/// The extension: the same hook for every session.
struct Recording {
    hook: Arc<RecordingHook>,
}

impl Extension for Recording {
    fn name(&self) -> &'static str {
        "recording"
    }

    fn contribute(&self, _scope: &Scope<'_>, into: &mut Contributions) -> Result<(), SetupError> {
        into.hooks.push(Arc::clone(&self.hook) as Arc<dyn LoopHook>);
        into.commands.push(CommandSpec::prompt(
            "greet",
            "Greet someone",
            Some("a name"),
            "Please greet $ARGUMENTS.",
        ));
        into.prompt_sections.push(PROMPT_SECTION.to_string());
        Ok(())
    }
}

/// Writes each point it reaches and denies calls of one tool.
struct RecordingHook {
    log: Option<PathBuf>,
    deny: Option<String>,
    writing: Mutex<()>,
}

impl RecordingHook {
    fn record(&self, at: &LoopContext, point: &str, tool: Option<&str>) {
        let Some(log) = &self.log else { return };
        let line = json!({"point": point, "session": at.session_id, "tool": tool});
        let _serialised = self
            .writing
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("the recording log opens");
        writeln!(file, "{line}").expect("the recording log takes a line");
    }
}

#[async_trait::async_trait]
impl LoopHook for RecordingHook {
    fn name(&self) -> &str {
        "recording"
    }

    async fn before_prompt(&self, at: &LoopContext, _prompt: &PromptPoint) -> PromptOutcome {
        self.record(at, "before_prompt", None);
        PromptOutcome::default()
    }

    async fn before_tool(&self, at: &LoopContext, call: &ToolCallPoint) -> ToolCallOutcome {
        self.record(at, "before_tool", Some(&call.tool));
        let mut outcome = ToolCallOutcome::default();
        if self.deny.as_deref() == Some(call.tool.as_str()) {
            outcome.decision = Some(HookDecision::Deny(
                "the recording extension denies this tool".to_string(),
            ));
        }
        outcome
    }

    async fn after_tool(&self, at: &LoopContext, result: &ToolResultPoint) -> ToolResultOutcome {
        self.record(at, "after_tool", Some(&result.tool));
        ToolResultOutcome::default()
    }

    async fn before_stop(&self, at: &LoopContext, _stop: &StopPoint) -> StopOutcome {
        self.record(at, "before_stop", None);
        StopOutcome::default()
    }

    async fn before_compact(&self, at: &LoopContext, _compact: &CompactPoint) -> CompactOutcome {
        self.record(at, "before_compact", None);
        CompactOutcome::default()
    }

    async fn after_compact(&self, at: &LoopContext, _compacted: &CompactedPoint) -> Option<String> {
        self.record(at, "after_compact", None);
        None
    }
}
