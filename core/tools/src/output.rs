//! Keeping tool output within what a model can use.
//!
//! Long output keeps its head and its tail, because the start of a log says what ran and
//! the end says how it finished; the middle gives way to a marker that says how much went.
//! [`OutputBuffer`] does the same for a stream of unknown length while holding only a
//! bounded amount of it in memory.

use std::collections::VecDeque;

/// Longest line shown by `read` and `grep`; longer lines are cut with a marker.
pub const MAX_LINE_CHARS: usize = 2000;

/// `text` cut to at most `max_chars` characters of content: its head and tail with a
/// "[… N characters omitted …]" marker between, or unchanged when it fits.
pub fn truncate_middle(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_string();
    }
    let head_chars = max_chars / 2;
    let tail_chars = max_chars - head_chars;
    let head: String = text.chars().take(head_chars).collect();
    let tail_start = byte_index_of_char(text, total - tail_chars);
    join_with_marker(&head, total - head_chars - tail_chars, &text[tail_start..])
}

fn join_with_marker(head: &str, omitted: usize, tail: &str) -> String {
    format!("{head}\n[… {omitted} characters omitted …]\n{tail}")
}

fn byte_index_of_char(text: &str, char_index: usize) -> usize {
    text.char_indices()
        .nth(char_index)
        .map_or(text.len(), |(index, _)| index)
}

/// `line` cut to [`MAX_LINE_CHARS`] characters with a marker saying how many were cut.
pub fn cut_line(line: &str) -> String {
    let total = line.chars().count();
    if total <= MAX_LINE_CHARS {
        return line.to_string();
    }
    let end = byte_index_of_char(line, MAX_LINE_CHARS);
    format!(
        "{}… [line cut: {} more characters]",
        &line[..end],
        total - MAX_LINE_CHARS
    )
}

/// Collects a byte stream, keeping at most a bounded head and tail of it.
///
/// Bytes that fall between the head and the tail are only counted (as characters: every
/// byte that does not continue a UTF-8 sequence), so a command printing gigabytes costs
/// no memory.
#[derive(Debug)]
pub struct OutputBuffer {
    max_chars: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped_chars: usize,
}

impl OutputBuffer {
    /// A buffer whose [`finish`](Self::finish) returns at most `max_chars` characters of
    /// content.
    pub fn new(max_chars: usize) -> Self {
        OutputBuffer {
            max_chars,
            head: Vec::new(),
            tail: VecDeque::new(),
            dropped_chars: 0,
        }
    }

    /// Bytes kept at each end; four per character covers any UTF-8 text.
    fn keep_bytes(&self) -> usize {
        self.max_chars.saturating_mul(4).max(4)
    }

    /// Appends a chunk of the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        let keep = self.keep_bytes();
        if self.head.len() < keep {
            let take = bytes.len().min(keep - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        while self.tail.len() > keep {
            let overflow = self.tail.len() - keep;
            self.dropped_chars += self
                .tail
                .drain(..overflow)
                .filter(|byte| byte & 0xC0 != 0x80)
                .count();
        }
    }

    /// The collected text, invalid UTF-8 replaced, cut to the limit with a marker.
    pub fn finish(&self) -> String {
        let tail_bytes: Vec<u8> = self.tail.iter().copied().collect();
        if self.dropped_chars == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail_bytes);
            return truncate_middle(&String::from_utf8_lossy(&all), self.max_chars);
        }
        let head = String::from_utf8_lossy(&self.head);
        let tail = String::from_utf8_lossy(&tail_bytes);
        let head_chars = self.max_chars / 2;
        let tail_chars = self.max_chars - head_chars;
        let head_total = head.chars().count();
        let tail_total = tail.chars().count();
        let kept_head: String = head.chars().take(head_chars).collect();
        let tail_start = byte_index_of_char(&tail, tail_total.saturating_sub(tail_chars));
        let omitted = head_total.saturating_sub(head_chars)
            + self.dropped_chars
            + tail_total.saturating_sub(tail_chars);
        join_with_marker(&kept_head, omitted, &tail[tail_start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(truncate_middle("hello", 5), "hello");
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        let cut = truncate_middle("abcdefghij", 4);
        assert_eq!(cut, "ab\n[… 6 characters omitted …]\nij");
    }

    #[test]
    fn truncation_respects_multibyte_characters() {
        let cut = truncate_middle("ééééééé", 2);
        assert_eq!(cut, "é\n[… 5 characters omitted …]\né");
    }

    #[test]
    fn long_lines_are_cut_with_a_count() {
        let line = "x".repeat(MAX_LINE_CHARS + 7);
        let cut = cut_line(&line);
        assert!(cut.starts_with(&"x".repeat(MAX_LINE_CHARS)));
        assert!(cut.ends_with("[line cut: 7 more characters]"));
    }

    #[test]
    fn buffer_matches_truncate_middle_for_any_chunking() {
        let text: String = (0..5000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        for chunk in [1, 7, 100, 5000] {
            let mut buffer = OutputBuffer::new(10);
            for piece in text.as_bytes().chunks(chunk) {
                buffer.push(piece);
            }
            assert_eq!(buffer.finish(), truncate_middle(&text, 10), "chunk {chunk}");
        }
    }

    #[test]
    fn buffer_counts_dropped_multibyte_characters() {
        let text = "é".repeat(1000);
        let mut buffer = OutputBuffer::new(4);
        buffer.push(text.as_bytes());
        assert_eq!(buffer.finish(), "éé\n[… 996 characters omitted …]\néé");
    }
}
