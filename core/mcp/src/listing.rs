//! A server's tool list as Larik holds it: each tool's name, description and the two
//! annotations Larik reads are parsed, its input schema is kept as the JSON text the
//! server sent and becomes a value only when a request or a search result needs it. The
//! same shape is read from a live server's `tools/list` and from the kept lists of lazy
//! servers (`cache`), so fifty configured servers cost little more than reading their
//! files. A listed tool that cannot be read is left out.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// One listed tool.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ListedTool {
    /// The name the server knows it by.
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    /// The input schema as sent; `None` when it was missing.
    #[serde(
        rename = "inputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) input_schema: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub(crate) annotations: Annotations,
}

/// The annotations Larik reads; a value that is not a boolean counts as absent.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Annotations {
    #[serde(
        rename = "readOnlyHint",
        default,
        deserialize_with = "boolean",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) read_only: Option<bool>,
    #[serde(
        rename = "openWorldHint",
        default,
        deserialize_with = "boolean",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) open_world: Option<bool>,
}

impl Annotations {
    fn is_empty(&self) -> bool {
        self.read_only.is_none() && self.open_world.is_none()
    }
}

fn boolean<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<bool>, D::Error> {
    Ok(Value::deserialize(deserializer)?.as_bool())
}

impl ListedTool {
    /// About how many bytes it takes in a request as a tool of server `server`: its name,
    /// description and schema.
    pub(crate) fn request_bytes(&self, server: &str) -> usize {
        let description = self.description_text().len();
        let schema = self
            .input_schema
            .as_deref()
            .map_or(16, |schema| schema.get().len());
        7 + server.len() + self.name.len() + description + schema + 48
    }

    /// What it does: its description, else its title.
    pub(crate) fn description_text(&self) -> &str {
        self.description
            .as_deref()
            .or(self.title.as_deref())
            .unwrap_or_default()
    }

    /// Its input schema when it is a JSON object, else `None`.
    pub(crate) fn object_schema(&self) -> Option<&RawValue> {
        self.input_schema
            .as_deref()
            .filter(|schema| schema.get().trim_start().starts_with('{'))
    }
}

/// The tools of a list in JSON (`[{"name": …}, …]`); `None` when it is not a list.
pub(crate) fn parse_list(text: &str) -> Option<Vec<ListedTool>> {
    // Most lists read whole; one with a tool that cannot be read is read tool by tool.
    if let Ok(tools) = serde_json::from_str(text) {
        return Some(tools);
    }
    let items: Vec<&RawValue> = serde_json::from_str(text).ok()?;
    Some(
        items
            .into_iter()
            .filter_map(|item| serde_json::from_str(item.get()).ok())
            .collect(),
    )
}

/// `tools` as a JSON list.
pub(crate) fn list_text(tools: &[ListedTool]) -> Result<String, String> {
    serde_json::to_string(tools).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_read_leniently_and_written_back_the_same() {
        let text = r#"[
            {"name": "a", "description": "A.", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
             "annotations": {"readOnlyHint": true, "openWorldHint": "no", "title": "ignored"}},
            {"description": "no name"},
            {"name": "b", "inputSchema": [1, 2]}
        ]"#;
        let tools = parse_list(text).expect("a list");
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].annotations.read_only, Some(true));
        assert_eq!(tools[0].annotations.open_world, None);
        assert!(tools[0].object_schema().is_some());
        assert!(tools[1].object_schema().is_none());
        let again = parse_list(&list_text(&tools).expect("written")).expect("a list");
        assert_eq!(again.len(), 2);
        assert_eq!(
            again[0].object_schema().map(RawValue::get),
            tools[0].object_schema().map(RawValue::get)
        );
        assert!(parse_list("{}").is_none());
    }
}
