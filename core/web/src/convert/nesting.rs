//! A bound on how deep a page's elements nest before the HTML parser sees it. The parser
//! (`html5ever`, as browsers parse) checks its stack of open elements for many tags and
//! re-opens every formatting element still active (`<b>`, `<font>`, …) wherever text
//! follows a closed block, so a page of thousands of nested elements takes time that grows
//! with the square of its size, and one with hundreds of unclosed formatting elements
//! followed by many paragraphs makes a node for each pair (a 56 KB page gave three million
//! nodes and 700 MB). Here the tags are followed roughly as the parser would nest them, and
//! a start tag past [`MOST_OPEN`] open elements, [`MOST_FORMATTING`] active formatting
//! elements or [`MOST_INDENTED`] lists and quotes is left out, with its end tag; the text
//! stays. Ordinary pages stay far below
//! both bounds and are passed on as they are.

use std::borrow::Cow;
use std::collections::HashMap;

/// The most elements open at once.
pub(super) const MOST_OPEN: usize = 128;

/// The most formatting elements active at once (a browser keeps at most three alike).
pub(super) const MOST_FORMATTING: usize = 12;

/// The most lists and quotes open at once: the converter indents (or quotes) every line of
/// what is inside each again, so deep ones cost the depth times the page.
pub(super) const MOST_INDENTED: usize = 16;

/// Elements whose content the converter indents or quotes.
const INDENTING: [&str; 5] = ["blockquote", "dir", "menu", "ol", "ul"];

/// Elements that never have content.
const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// Elements whose content is text up to their end tag.
const RAW_TEXT: [&str; 9] = [
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript",
];

/// Formatting elements: the parser re-opens them after a block closes them.
const FORMATTING: [&str; 14] = [
    "a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u",
];

/// Elements an end tag does not look past for its start tag.
const SCOPE_BOUNDARIES: [&str; 9] = [
    "applet", "caption", "html", "table", "td", "th", "marquee", "object", "template",
];

/// Start tags that close an open paragraph.
const CLOSES_P: [&str; 28] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "ul",
];

/// `html` with the start tags (and their end tags) past the bounds left out; the text as it
/// is when nothing had to go.
pub(super) fn bounded(html: &str) -> Cow<'_, str> {
    let mut scan = Scan::default();
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        rest = &rest[open..];
        let Some(tag) = Tag::read(rest) else {
            // Not a tag: a lone `<` is text.
            out.push('<');
            rest = &rest[1..];
            continue;
        };
        let (text, after) = rest.split_at(tag.len);
        rest = after;
        if scan.keep(&tag) {
            out.push_str(text);
        }
        if tag.kind == TagKind::Start && RAW_TEXT.contains(&tag.name.as_str()) {
            let end = raw_text_end(rest, &tag.name);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
        } else if tag.kind == TagKind::Start && tag.name == "plaintext" {
            out.push_str(rest);
            rest = "";
        }
    }
    out.push_str(rest);
    if scan.left_out {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(html)
    }
}

/// Where the raw text of an element `name` ends: at its end tag, or the end of the page.
fn raw_text_end(text: &str, name: &str) -> usize {
    let mut from = 0;
    while let Some(at) = text[from..].find("</") {
        let start = from + at;
        let after = &text.as_bytes()[start + 2..];
        if after.len() >= name.len()
            && after[..name.len()].eq_ignore_ascii_case(name.as_bytes())
            && after
                .get(name.len())
                .is_none_or(|&byte| byte.is_ascii_whitespace() || byte == b'/' || byte == b'>')
        {
            return start;
        }
        from = start + 2;
    }
    text.len()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TagKind {
    /// `<name …>`.
    Start,
    /// `</name …>`.
    End,
    /// A comment, a doctype or a processing instruction.
    Other,
}

/// One tag at the start of the text.
#[derive(Debug)]
struct Tag {
    kind: TagKind,
    /// Lowercase.
    name: String,
    /// Ends with `/>`.
    self_closing: bool,
    /// Its length in the text, `>` included.
    len: usize,
}

impl Tag {
    /// The tag `text` starts with (`text` starts with `<`); `None` when the `<` is text.
    fn read(text: &str) -> Option<Tag> {
        let bytes = text.as_bytes();
        if let Some(comment) = text.strip_prefix("<!--") {
            let len = comment.find("-->").map_or(text.len(), |at| 4 + at + 3);
            return Some(Tag::other(len));
        }
        if matches!(bytes.get(1), Some(b'!' | b'?')) {
            return Some(Tag::other(text.find('>').map_or(text.len(), |at| at + 1)));
        }
        let (kind, name_at) = match bytes.get(1) {
            Some(b'/') => (TagKind::End, 2),
            _ => (TagKind::Start, 1),
        };
        if !bytes.get(name_at).is_some_and(u8::is_ascii_alphabetic) {
            return None;
        }
        let name_len = bytes[name_at..]
            .iter()
            .position(|&byte| byte.is_ascii_whitespace() || byte == b'/' || byte == b'>')
            .unwrap_or(bytes.len() - name_at);
        let name = text[name_at..name_at + name_len].to_ascii_lowercase();
        // The tag ends at the first `>` outside a quoted attribute value.
        let mut quote = None;
        let mut end = None;
        for (at, &byte) in bytes.iter().enumerate().skip(name_at + name_len) {
            match (quote, byte) {
                (Some(open), byte) if byte == open => quote = None,
                (Some(_), _) => {}
                (None, b'"' | b'\'') => quote = Some(byte),
                (None, b'>') => {
                    end = Some(at);
                    break;
                }
                (None, _) => {}
            }
        }
        let len = end.map_or(text.len(), |at| at + 1);
        let self_closing = end.is_some_and(|at| at > 0 && bytes[at - 1] == b'/');
        Some(Tag {
            kind,
            name,
            self_closing,
            len,
        })
    }

    fn other(len: usize) -> Tag {
        Tag {
            kind: TagKind::Other,
            name: String::new(),
            self_closing: false,
            len,
        }
    }
}

/// The elements open and the formatting elements active so far, as the parser would
/// roughly have them.
#[derive(Debug, Default)]
struct Scan {
    open: Vec<String>,
    formatting: Vec<String>,
    /// Start tags left out, by name, whose end tags are left out too.
    left_out_open: HashMap<String, usize>,
    left_out: bool,
}

impl Scan {
    /// Follows `tag`; whether it is kept.
    fn keep(&mut self, tag: &Tag) -> bool {
        match tag.kind {
            TagKind::Other => true,
            TagKind::End => self.end(&tag.name),
            TagKind::Start => self.start(tag),
        }
    }

    fn start(&mut self, tag: &Tag) -> bool {
        let name = tag.name.as_str();
        // Raw-text elements hold no tags and end at their own end tag: they never nest.
        // `/>` closes only a foreign element (SVG, MathML); the parser ignores it on an
        // HTML one, so `<div/>` opens a `div` like `<div>`.
        let foreign = || {
            name == "svg"
                || name == "math"
                || self.open.iter().any(|open| open == "svg" || open == "math")
        };
        if VOID.contains(&name)
            || RAW_TEXT.contains(&name)
            || (tag.self_closing && foreign())
            || name == "plaintext"
        {
            return true;
        }
        self.close_implied(name);
        let formatting = FORMATTING.contains(&name);
        let indented = || {
            let open = self.open.iter();
            open.filter(|open| INDENTING.contains(&open.as_str()))
                .count()
        };
        if self.open.len() >= MOST_OPEN
            || (formatting && self.formatting.len() >= MOST_FORMATTING)
            || (INDENTING.contains(&name) && indented() >= MOST_INDENTED)
        {
            *self.left_out_open.entry(tag.name.clone()).or_default() += 1;
            self.left_out = true;
            return false;
        }
        self.open.push(tag.name.clone());
        if formatting {
            self.formatting.push(tag.name.clone());
        }
        true
    }

    /// Closes what a start tag `name` closes by itself: a paragraph before a block, a list
    /// item before the next, a cell before the next cell or row.
    fn close_implied(&mut self, name: &str) {
        let siblings: &[&str] = match name {
            "li" => &["li"],
            "dt" | "dd" => &["dt", "dd"],
            "td" | "th" => &["td", "th"],
            "tr" => &["td", "th", "tr"],
            "option" => &["option"],
            _ => &[],
        };
        while self.top().is_some_and(|open| siblings.contains(&open)) {
            self.open.pop();
        }
        if (CLOSES_P.contains(&name) || siblings.contains(&"li")) && self.top() == Some("p") {
            self.open.pop();
        }
    }

    /// The innermost open element.
    fn top(&self) -> Option<&str> {
        self.open.last().map(String::as_str)
    }

    fn end(&mut self, name: &str) -> bool {
        if FORMATTING.contains(&name)
            && let Some(at) = self.formatting.iter().rposition(|active| active == name)
        {
            self.formatting.remove(at);
        }
        let found = self
            .open
            .iter()
            .rev()
            .position(|open| open == name || SCOPE_BOUNDARIES.contains(&open.as_str()))
            .map(|from_top| self.open.len() - 1 - from_top);
        match found {
            Some(at) if self.open[at] == name => {
                self.open.truncate(at);
                true
            }
            _ => match self.left_out_open.get_mut(name) {
                Some(count) if *count > 0 => {
                    *count -= 1;
                    false
                }
                _ => true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_pages_pass_as_they_are() {
        let page = "<!DOCTYPE html><html><head><title>a <b> c</title><script>if (a<b) x('</div>')</script></head>\
                    <body><p>one<p>two<ul><li>a<li>b</ul><table><tr><td>1<td>2<tr><td>3</table>\
                    <img src=x><br/><font><font>old</font></font><!-- <div> --></body></html>";
        assert!(matches!(bounded(page), Cow::Borrowed(_)));
    }

    #[test]
    fn nesting_past_the_bounds_is_left_out_and_the_text_kept() {
        let deep = format!("{}deep{}", "<div>".repeat(1000), "</div>".repeat(1000));
        let kept = bounded(&deep);
        assert_eq!(kept.matches("<div>").count(), MOST_OPEN);
        assert_eq!(kept.matches("</div>").count(), MOST_OPEN);
        assert!(kept.contains("deep"));
        let formatting: String = (0..100).map(|i| format!("<b class=\"c{i}\">")).collect();
        let soup = format!("<p>{formatting}</p>{}", "<p>x</p>".repeat(10));
        assert_eq!(bounded(&soup).matches("<b ").count(), MOST_FORMATTING);
        let lists = format!("{}item", "<ol><li>".repeat(100));
        assert_eq!(bounded(&lists).matches("<ol>").count(), MOST_INDENTED);
    }

    #[test]
    fn self_closing_html_elements_nest_as_the_parser_nests_them() {
        let divs = format!("{}deep", "<div/>".repeat(1000));
        assert_eq!(bounded(&divs).matches("<div/>").count(), MOST_OPEN);
        let formatting = format!("<p>{}</p>{}", "<b/>".repeat(100), "<p>x</p>".repeat(10));
        assert_eq!(
            bounded(&formatting).matches("<b/>").count(),
            MOST_FORMATTING
        );
        // Inside SVG `/>` does close the element: none of these nest.
        let svg = format!("<svg>{}</svg>", "<path d=\"M0 0\"/>".repeat(1000));
        assert!(matches!(bounded(&svg), Cow::Borrowed(_)));
    }
}
