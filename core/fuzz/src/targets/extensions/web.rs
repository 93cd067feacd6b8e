//! `web_page`: a fetched body as `web_fetch` gives it to the model, rendered (raw, HTML to
//! Markdown with `htmd`, or plain text) and cut into the page asked for.
//!
//! The input's first line chooses how: `<format> <start> <max_length> <content type>`
//! (`markdown 0 20000 text/html; charset=utf-8`; a content type of `-` is none, so the
//! body is sniffed); the rest is the body. A first line that does not read that way is part
//! of the body, rendered as Markdown from the start with the default length. Whatever the
//! body: no panic and no overflowed stack (deeply nested HTML), the page holds at most
//! `max_length` characters of the rendering from `start` (whole characters, so no cut
//! splits one), and its note says exactly where to read on and how much is left.

use larik_web::fuzzing;
use larik_web::tools::{DEFAULT_MAX_LENGTH, MOST_MAX_LENGTH};
use larik_web::{Fetched, Format};

/// Fragments of HTML pages that mutations splice in.
pub(super) const TOKENS: &[&str] = &[
    "<!DOCTYPE html>",
    "<html>",
    "<head><title>t</title></head>",
    "<body>",
    "<div>",
    "</div>",
    "<p>",
    "</p>",
    "<pre><code class=\"language-rust\">",
    "</code></pre>",
    "<code>",
    "</code>",
    "<table><tr><th>a</th></tr><tr><td>1</td></tr></table>",
    "<td>",
    "<ul><li>",
    "<ol start=\"3\"><li>",
    "</li>",
    "<a href=\"",
    "<a href=\"../x.html#y\">",
    "<a href=\"javascript:alert(1)\">",
    "</a>",
    "<img src=\"/i.png\" alt=\"",
    "<script>",
    "</script>",
    "<style>",
    "<template>",
    "<noscript>",
    "<svg><g>",
    "<math>",
    "<blockquote>",
    "<h1>",
    "<h6>",
    "<br>",
    "<hr>",
    "<b><i><u>",
    "</b>",
    "&amp;",
    "&lt;",
    "&#x1F980;",
    "&#0;",
    "&nbsp;",
    "<!--",
    "-->",
    "<![CDATA[",
    "](",
    "[",
    "```",
    "**",
    "markdown ",
    "text ",
    "raw ",
    " 0 ",
    " 1 ",
    " 18446744073709551615 ",
    " text/html\n",
    " -\n",
    " application/json\n",
    " image/png\n",
];

/// Reads the input's first line as the call's choices, or the defaults.
fn choices(text: &str) -> (Format, usize, usize, Option<String>, &str) {
    let defaults = (
        Format::Markdown,
        0,
        DEFAULT_MAX_LENGTH,
        Some("text/html".to_string()),
        text,
    );
    let Some((line, body)) = text.split_once('\n') else {
        return defaults;
    };
    let mut words = line.splitn(4, ' ');
    let (Some(format), Some(start), Some(length), kind) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return defaults;
    };
    let (Some(format), Ok(start), Ok(length)) = (
        Format::from_name(format),
        start.parse::<usize>(),
        length.parse::<usize>(),
    ) else {
        return defaults;
    };
    let kind = kind
        .map(str::trim)
        .filter(|kind| *kind != "-")
        .map(str::to_string);
    // `web_fetch` keeps the length within these bounds.
    (format, start, length.clamp(1, MOST_MAX_LENGTH), kind, body)
}

pub(super) fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (format, start, max_length, content_type, body) = choices(&text);
    let Ok(url) = url::Url::parse("https://example.org/docs/guide/intro.html") else {
        panic!("the page's address does not parse");
    };
    let fetched = Fetched {
        url,
        status: 200,
        content_type,
        body: body.as_bytes().to_vec(),
        cut: false,
    };
    let (rendered, page) = fuzzing::page(&fetched, format, start, max_length);
    let total = rendered.chars().count();
    assert_eq!(
        page.total_chars, total,
        "the page counts another rendering's length"
    );
    let shown: String = rendered.chars().skip(start).take(max_length).collect();
    let Some(note) = page.content.strip_prefix(shown.as_str()) else {
        panic!(
            "the page does not start with the {max_length} characters from {start} of the rendering"
        );
    };
    let shown_to = start.saturating_add(shown.chars().count());
    if shown_to < total {
        let expected = format!(
            "\n\n[{} more characters; fetch again with start={shown_to} to read on]",
            total - shown_to
        );
        assert_eq!(note, expected, "the note does not say where to read on");
    } else {
        assert_eq!(note, "", "a page that shows the end says more follows");
    }
}
