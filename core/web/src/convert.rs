//! A fetched page as the model reads it: `raw` (the body as sent), `markdown` (HTML turned
//! into Markdown with `htmd`, scripts, styles, navigation, headers, footers and forms left
//! out, links and images made absolute; other content as sent), or `text` (that Markdown
//! without its markup). A hostile page cannot make the conversion slow or deep: nesting past
//! a bound is left out before parsing ([`nesting`]), and what the parser still nests past
//! [`MOST_DEPTH`] keeps only its text.

mod nesting;

use std::rc::Rc;

use htmd::Node;
use url::Url;

use crate::fetch::Fetched;

/// How a page is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The body as sent.
    Raw,
    /// HTML as Markdown.
    Markdown,
    /// HTML as plain text.
    Text,
}

impl Format {
    /// The format named `name` (`raw`, `markdown`, `text`).
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "raw" => Some(Format::Raw),
            "markdown" => Some(Format::Markdown),
            "text" => Some(Format::Text),
            _ => None,
        }
    }
}

/// Whether the resource is HTML.
fn is_html(fetched: &Fetched) -> bool {
    match &fetched.content_type {
        Some(kind) => kind.to_ascii_lowercase().contains("html"),
        None => {
            let start: String =
                String::from_utf8_lossy(&fetched.body[..fetched.body.len().min(512)])
                    .trim_start()
                    .to_ascii_lowercase();
            start.starts_with("<!doctype html") || start.starts_with("<html")
        }
    }
}

/// Whether the resource is not text: a type that is neither text nor a text format, or
/// a NUL byte near the start.
fn is_binary(fetched: &Fetched) -> bool {
    let textual = fetched.content_type.as_deref().is_none_or(|kind| {
        let kind = kind.to_ascii_lowercase();
        [
            "text/",
            "json",
            "xml",
            "javascript",
            "html",
            "yaml",
            "toml",
            "csv",
        ]
        .iter()
        .any(|part| kind.contains(part))
    });
    !textual || fetched.body[..fetched.body.len().min(1024)].contains(&0)
}

/// The page in `format`.
pub fn render(fetched: &Fetched, format: Format) -> String {
    if is_binary(fetched) {
        return format!(
            "[binary content ({}, {} bytes): not shown]",
            fetched
                .content_type
                .as_deref()
                .unwrap_or("of no stated type"),
            fetched.body.len()
        );
    }
    let body = String::from_utf8_lossy(&fetched.body);
    if format == Format::Raw || !is_html(fetched) {
        return body.into_owned();
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "nav", "header", "footer", "form", "iframe",
            "svg", "head",
        ])
        .build();
    let markdown = match converter.html_to_tree(&nesting::bounded(&body)) {
        Ok(tree) => {
            flatten_below(&tree, MOST_DEPTH);
            converter.tree_to_markdown(&tree)
        }
        Err(_) => body.to_string(),
    };
    let markdown = absolute_links(&markdown, &fetched.url);
    match format {
        Format::Text => plain_text(&markdown),
        _ => markdown,
    }
}

/// How deep elements may nest and still be converted as they are. The converter walks the
/// page's tree recursively, so a page of thousands of nested elements would overflow the
/// stack; below this depth only the text (and empty elements such as images) is kept.
const MOST_DEPTH: usize = 100;

/// Flattens every element `depth` levels below `root`: its children become the leaves under
/// it (text, and elements without children), in document order, and the markup between
/// them goes.
fn flatten_below(root: &Rc<Node>, depth: usize) {
    let mut pending = vec![(Rc::clone(root), 0)];
    while let Some((node, level)) = pending.pop() {
        if level < depth {
            let children = node.children.borrow();
            pending.extend(children.iter().map(|child| (Rc::clone(child), level + 1)));
            continue;
        }
        let mut leaves = Vec::new();
        let mut below: Vec<Rc<Node>> = node.children.borrow().iter().rev().cloned().collect();
        while let Some(next) = below.pop() {
            let children = next.children.borrow();
            if children.is_empty() {
                drop(children);
                leaves.push(next);
            } else {
                below.extend(children.iter().rev().cloned());
            }
        }
        for leaf in &leaves {
            leaf.parent.set(Some(Rc::downgrade(&node)));
        }
        *node.children.borrow_mut() = leaves;
    }
}

/// `markdown` with the targets of its links and images joined to `base`.
pub fn absolute_links(markdown: &str, base: &Url) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..at + 2]);
        rest = &rest[at + 2..];
        let end = rest.find([')', ' ']).unwrap_or(rest.len());
        let target = &rest[..end];
        match base.join(target) {
            Ok(joined) if !target.is_empty() && !target.starts_with('#') => {
                out.push_str(joined.as_str());
            }
            _ => out.push_str(target),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Markdown without its markup: link and image syntax down to their text, heading marks,
/// emphasis and code fences gone.
fn plain_text(markdown: &str) -> String {
    let mut text = String::with_capacity(markdown.len());
    for line in markdown.lines() {
        let line = line.trim_start_matches('#').trim_start();
        if line.starts_with("```") {
            continue;
        }
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        // `![alt](url)` and `[text](url)` → alt / text.
        while let Some(open) = rest.find('[') {
            let close = rest[open..].find("](").map(|at| open + at);
            let end = close.and_then(|close| rest[close..].find(')').map(|at| close + at));
            match (close, end) {
                (Some(close), Some(end)) => {
                    let before = rest[..open].strip_suffix('!').unwrap_or(&rest[..open]);
                    out.push_str(before);
                    out.push_str(&rest[open + 1..close]);
                    rest = &rest[end + 1..];
                }
                _ => {
                    out.push_str(&rest[..=open]);
                    rest = &rest[open + 1..];
                }
            }
        }
        out.push_str(rest);
        text.push_str(&out.replace("**", "").replace("__", "").replace('`', ""));
        text.push('\n');
    }
    text.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(html: &str) -> Fetched {
        Fetched {
            url: Url::parse("https://example.org/docs/intro.html").expect("url"),
            status: 200,
            content_type: Some("text/html; charset=utf-8".into()),
            body: html.as_bytes().to_vec(),
            cut: false,
        }
    }

    #[test]
    fn deeply_nested_html_keeps_its_text_and_does_not_overflow_the_stack() {
        // Thousands of nested elements overflowed the converter's recursion.
        let html = format!(
            "<p>top</p>{}deep <b>bold</b> <img src=\"/a.png\" alt=\"A\">{}<p>after</p>",
            "<div><span>".repeat(5000),
            "</span></div>".repeat(5000)
        );
        let markdown = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || render(&page(&html), Format::Markdown))
            .expect("a thread")
            .join()
            .expect("no overflow");
        for kept in ["top", "deep", "bold", "https://example.org/a.png", "after"] {
            assert!(markdown.contains(kept), "{kept} lost from {markdown}");
        }
    }

    #[test]
    fn html_becomes_markdown_without_chrome_and_with_absolute_links() {
        let html = "<html><head><title>T</title><script>evil()</script></head><body>\
                    <header>Site header</header><nav><a href=\"/\">Home</a></nav>\
                    <h1>Intro</h1><p>Read <a href=\"guide.html\">the guide</a> and \
                    <a href=\"#top\">top</a>. <img src=\"/img/a.png\" alt=\"A\"></p>\
                    <footer>Copyright</footer></body></html>";
        let markdown = render(&page(html), Format::Markdown);
        assert!(markdown.contains("# Intro"), "{markdown}");
        assert!(
            markdown.contains("[the guide](https://example.org/docs/guide.html)"),
            "{markdown}"
        );
        assert!(markdown.contains("(#top)"), "{markdown}");
        assert!(
            markdown.contains("https://example.org/img/a.png"),
            "{markdown}"
        );
        for gone in ["evil", "Site header", "Home", "Copyright"] {
            assert!(!markdown.contains(gone), "{gone} in {markdown}");
        }
        let text = render(&page(html), Format::Text);
        assert!(text.starts_with("Intro"), "{text}");
        assert!(text.contains("Read the guide and top."), "{text}");
        assert!(!text.contains("]("), "{text}");
        assert!(render(&page(html), Format::Raw).contains("<script>evil()</script>"));
    }
}
