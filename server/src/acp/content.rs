//! What the editor sends as a prompt, turned into the agent's user content; and the slash
//! commands a prompt can start with.
//!
//! Embedded resources (files the user attached with `@`) become text wrapped in a
//! `<context ref="…">` tag so the model knows where the text came from; resource links
//! become a line naming the file, which the model can then read.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use larik_protocol::UserContent;

/// A slash command at the start of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/compact [instructions]`.
    Compact(Option<String>),
    /// `/model [provider/model]`.
    Model(Option<String>),
    /// `/mode [name]`.
    Mode(Option<String>),
    /// `/cost`.
    Cost,
    /// `/undo`.
    Undo,
}

/// The slash command a prompt starts with, when its text is one of ours. Anything else
/// (including an unknown `/word`) is an ordinary prompt.
pub fn slash_command(prompt: &[ContentBlock]) -> Option<SlashCommand> {
    let [ContentBlock::Text(text)] = prompt else {
        return None;
    };
    let line = text.text.trim();
    let rest = line.strip_prefix('/')?;
    let (name, argument) = match rest.split_once(char::is_whitespace) {
        Some((name, argument)) => (name, Some(argument.trim().to_string())),
        None => (rest, None),
    };
    let argument = argument.filter(|argument| !argument.is_empty());
    Some(match name {
        "compact" => SlashCommand::Compact(argument),
        "model" => SlashCommand::Model(argument),
        "mode" => SlashCommand::Mode(argument),
        "cost" => SlashCommand::Cost,
        "undo" => SlashCommand::Undo,
        _ => return None,
    })
}

/// Why a prompt cannot be sent to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    /// Nothing in it.
    #[error("the prompt is empty")]
    Empty,
    /// A kind of content the agent did not announce.
    #[error("{0} content is not supported; send text, images or resources")]
    Unsupported(&'static str),
}

/// The user content for a prompt.
pub fn user_content(prompt: Vec<ContentBlock>) -> Result<Vec<UserContent>, ContentError> {
    let mut content = Vec::new();
    for block in prompt {
        match block {
            ContentBlock::Text(text) => content.push(UserContent::Text { text: text.text }),
            ContentBlock::Image(image) => content.push(UserContent::Image {
                media_type: image.mime_type,
                data: image.data,
            }),
            ContentBlock::ResourceLink(link) => content.push(UserContent::Text {
                text: format!("[@{}]({})", link.name, link.uri),
            }),
            ContentBlock::Resource(resource) => match resource.resource {
                EmbeddedResourceResource::TextResourceContents(text) => {
                    content.push(UserContent::Text {
                        text: format!("<context ref=\"{}\">\n{}\n</context>", text.uri, text.text),
                    })
                }
                EmbeddedResourceResource::BlobResourceContents(blob) => {
                    match blob.mime_type.as_deref() {
                        Some(mime) if mime.starts_with("image/") => {
                            content.push(UserContent::Image {
                                media_type: mime.to_string(),
                                data: blob.blob,
                            })
                        }
                        _ => content.push(UserContent::Text {
                            text: format!("[binary attachment {} not shown]", blob.uri),
                        }),
                    }
                }
                _ => return Err(ContentError::Unsupported("this resource")),
            },
            ContentBlock::Audio(_) => return Err(ContentError::Unsupported("audio")),
            _ => return Err(ContentError::Unsupported("this")),
        }
    }
    let has_something = content.iter().any(|item| match item {
        UserContent::Text { text } => !text.trim().is_empty(),
        UserContent::Image { .. } => true,
    });
    if has_something {
        Ok(content)
    } else {
        Err(ContentError::Empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents,
    };

    fn text(text: &str) -> ContentBlock {
        ContentBlock::Text(TextContent::new(text))
    }

    #[test]
    fn slash_commands_are_parsed_with_their_argument() {
        assert_eq!(
            slash_command(&[text("/compact keep the API notes")]),
            Some(SlashCommand::Compact(Some("keep the API notes".into())))
        );
        assert_eq!(
            slash_command(&[text("  /model  ")]),
            Some(SlashCommand::Model(None))
        );
        assert_eq!(
            slash_command(&[text("/mode plan")]),
            Some(SlashCommand::Mode(Some("plan".into())))
        );
        assert_eq!(slash_command(&[text("/cost")]), Some(SlashCommand::Cost));
        assert_eq!(slash_command(&[text("/undo")]), Some(SlashCommand::Undo));
        assert_eq!(slash_command(&[text("/unknown thing")]), None);
        assert_eq!(slash_command(&[text("explain /compact")]), None);
        assert_eq!(slash_command(&[text("/compact"), text("more")]), None);
    }

    #[test]
    fn resources_and_images_become_user_content() {
        let content = user_content(vec![
            text("look at"),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///p/main.rs",
                )),
            )),
            ContentBlock::ResourceLink(ResourceLink::new("lib.rs", "file:///p/lib.rs")),
            ContentBlock::Image(ImageContent::new("aGk=", "image/png")),
        ])
        .expect("supported");
        assert_eq!(
            content[1],
            UserContent::Text {
                text: "<context ref=\"file:///p/main.rs\">\nfn main() {}\n</context>".into()
            }
        );
        assert_eq!(
            content[2],
            UserContent::Text {
                text: "[@lib.rs](file:///p/lib.rs)".into()
            }
        );
        assert_eq!(
            content[3],
            UserContent::Image {
                media_type: "image/png".into(),
                data: "aGk=".into()
            }
        );
    }

    #[test]
    fn empty_prompts_are_refused() {
        assert_eq!(user_content(vec![]), Err(ContentError::Empty));
        assert_eq!(user_content(vec![text("  ")]), Err(ContentError::Empty));
    }
}
