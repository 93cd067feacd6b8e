//! What the editor sends as a prompt, turned into the agent's user content.
//!
//! Embedded resources (files the user attached with `@`) become text wrapped in a
//! `<context ref="…">` tag so the model knows where the text came from; resource links
//! become a line naming the file, which the model can then read.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use larik_protocol::UserContent;

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
