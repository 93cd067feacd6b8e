//! The `skill` tool: the model loads a skill (or a described custom command) from the index
//! in its system prompt by name, and gets its full text with the arguments put in and the
//! folder its bundled files are in, which it reads with the ordinary tools. Read-only.

use larik_protocol::ToolKind;
use larik_tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::discover::Entry;
use crate::expand::expand;

/// `skill`.
pub struct SkillTool {
    /// The entries the model may load.
    entries: Vec<Entry>,
    description: String,
}

impl SkillTool {
    /// The tool for the model-invocable ones of `entries`.
    pub fn new(entries: &[Entry]) -> Self {
        SkillTool {
            entries: entries
                .iter()
                .filter(|entry| entry.model_invocable)
                .cloned()
                .collect(),
            description: "Load a skill listed under \"Skills\" in the system prompt by its \
                          name: returns its instructions, with `arguments` put in, and the \
                          folder its other files are in (read them with the usual tools when \
                          the instructions point to them). Load a skill before starting a \
                          task it matches."
                .to_string(),
        }
    }

    /// Whether there is anything to load.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[async_trait::async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        "skill"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name, as the index lists it."},
                "arguments": {"type": "string", "description": "What the skill should work on, if it takes anything."}
            },
            "required": ["name"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn read_only(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        match input.get("name").and_then(Value::as_str) {
            Some(name) => format!("Load skill {name}"),
            None => "Load a skill".to_string(),
        }
    }

    async fn run(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let Some(name) = input.get("name").and_then(Value::as_str) else {
            return ToolOutput::error("`name` is required: the skill's name from the index.");
        };
        let name = name.trim().trim_start_matches('/');
        let Some(entry) = self.entries.iter().find(|entry| entry.name == name) else {
            let names: Vec<&str> = self
                .entries
                .iter()
                .map(|entry| entry.name.as_str())
                .collect();
            return ToolOutput::error(format!(
                "There is no skill named `{name}`. Skills: {}.",
                names.join(", ")
            ));
        };
        let arguments = input.get("arguments").and_then(Value::as_str).unwrap_or("");
        ToolOutput::text(format!(
            "Skill `{}` ({}), from {}. Its folder is {}: files it mentions are there.\n\n{}",
            entry.name,
            entry.kind.as_str(),
            entry.file.display(),
            entry.dir.display(),
            expand(entry, arguments)
        ))
    }
}
