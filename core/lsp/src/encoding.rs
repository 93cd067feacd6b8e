//! Every conversion between Larik's positions and the wire's positions, in one place.
//!
//! Larik shows positions as 1-based line and 1-based column counted in characters (Unicode
//! scalar values). LSP positions are 0-based lines and a 0-based offset within the line
//! counted in the negotiated encoding's code units: UTF-16 unless the server picked UTF-8
//! (or UTF-32). Lines end at `\n`; a `\r` before it is not part of the line.

use ls_types::{Position, PositionEncodingKind};

/// The unit a server counts columns in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PositionEncoding {
    /// Bytes of UTF-8.
    Utf8,
    /// UTF-16 code units: the protocol's default.
    Utf16,
    /// Unicode scalar values.
    Utf32,
}

impl PositionEncoding {
    /// The encoding a server announced; anything unknown falls back to the default, UTF-16.
    pub fn from_kind(kind: Option<&PositionEncodingKind>) -> Self {
        match kind.map(PositionEncodingKind::as_str) {
            Some("utf-8") => Self::Utf8,
            Some("utf-32") => Self::Utf32,
            _ => Self::Utf16,
        }
    }

    fn width(self, ch: char) -> u32 {
        match self {
            Self::Utf8 => ch.len_utf8() as u32,
            Self::Utf16 => ch.len_utf16() as u32,
            Self::Utf32 => 1,
        }
    }
}

/// The text of line `index` (0-based) without its line ending, if the text has that line.
fn line_text(text: &str, index: u32) -> Option<&str> {
    text.split('\n')
        .nth(index as usize)
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
}

/// Converts a Larik position (1-based line, 1-based character column) to an LSP position.
/// A column past the end of its line is clamped to the line's end.
pub fn to_lsp(text: &str, line: u32, column: u32, encoding: PositionEncoding) -> Position {
    let line_index = line.saturating_sub(1);
    let wanted_chars = column.saturating_sub(1) as usize;
    let character = match line_text(text, line_index) {
        Some(content) => content
            .chars()
            .take(wanted_chars)
            .map(|ch| encoding.width(ch))
            .sum(),
        None => 0,
    };
    Position::new(line_index, character)
}

/// Converts an LSP position to Larik's (1-based line, 1-based character column). An offset
/// inside a character (half a surrogate pair, a byte inside a UTF-8 sequence) rounds down to
/// that character; an offset past the end of the line gives the column just after it. When
/// the text has no such line (the file changed since), the numbers are passed through.
pub fn from_lsp(text: &str, position: Position, encoding: PositionEncoding) -> (u32, u32) {
    let Some(content) = line_text(text, position.line) else {
        return (position.line + 1, position.character + 1);
    };
    let mut units = 0;
    let mut chars = 0;
    for ch in content.chars() {
        let width = encoding.width(ch);
        if units + width > position.character {
            break;
        }
        units += width;
        chars += 1;
    }
    (position.line + 1, chars + 1)
}

/// The byte offset in `text` of an LSP position, for applying edits. A line past the end
/// gives the end of the text; an offset past the end of its line gives the line's end
/// (before its `\r\n`); an offset inside a character rounds down to that character.
pub fn byte_offset(text: &str, position: Position, encoding: PositionEncoding) -> usize {
    let mut line_start = 0;
    for _ in 0..position.line {
        match text[line_start..].find('\n') {
            Some(newline) => line_start += newline + 1,
            None => return text.len(),
        }
    }
    let rest = &text[line_start..];
    let line = rest.split('\n').next().unwrap_or("");
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut units = 0;
    for (index, ch) in line.char_indices() {
        let width = encoding.width(ch);
        if units + width > position.character {
            return line_start + index;
        }
        units += width;
    }
    line_start + line.len()
}

/// The LSP position just after the last character of `text`.
pub fn end_of(text: &str, encoding: PositionEncoding) -> Position {
    let line = text.matches('\n').count() as u32;
    let last = text.rsplit('\n').next().unwrap_or("");
    Position::new(line, last.chars().map(|ch| encoding.width(ch)).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "ab\r\n\u{e9}\u{1F600}x = 1\n";

    #[test]
    fn columns_count_characters_on_our_side_and_units_on_theirs() {
        // Line 2: 'é' is 2 UTF-8 bytes / 1 UTF-16 unit, the emoji 4 bytes / 2 units.
        assert_eq!(
            to_lsp(TEXT, 2, 3, PositionEncoding::Utf16),
            Position::new(1, 3)
        );
        assert_eq!(
            to_lsp(TEXT, 2, 3, PositionEncoding::Utf8),
            Position::new(1, 6)
        );
        assert_eq!(
            to_lsp(TEXT, 2, 3, PositionEncoding::Utf32),
            Position::new(1, 2)
        );
        for encoding in [
            PositionEncoding::Utf8,
            PositionEncoding::Utf16,
            PositionEncoding::Utf32,
        ] {
            for column in 1..=8 {
                let lsp = to_lsp(TEXT, 2, column, encoding);
                assert_eq!(from_lsp(TEXT, lsp, encoding), (2, column), "{encoding:?}");
            }
        }
    }

    #[test]
    fn odd_positions_are_clamped_or_rounded_down() {
        // Past the end of line 1 ("ab", the \r is not part of it).
        assert_eq!(
            to_lsp(TEXT, 1, 40, PositionEncoding::Utf16),
            Position::new(0, 2)
        );
        assert_eq!(
            from_lsp(TEXT, Position::new(0, 40), PositionEncoding::Utf16),
            (1, 3)
        );
        // Inside the emoji's surrogate pair.
        assert_eq!(
            from_lsp(TEXT, Position::new(1, 2), PositionEncoding::Utf16),
            (2, 2)
        );
        // A line the text does not have.
        assert_eq!(
            from_lsp(TEXT, Position::new(9, 4), PositionEncoding::Utf16),
            (10, 5)
        );
    }

    #[test]
    fn byte_offsets_follow_the_encoding_and_clamp() {
        // Line 2 starts at byte 4; 'é' is 2 bytes, the emoji 4.
        let at =
            |line, character, encoding| byte_offset(TEXT, Position::new(line, character), encoding);
        assert_eq!(at(1, 0, PositionEncoding::Utf16), 4);
        assert_eq!(at(1, 1, PositionEncoding::Utf16), 6);
        assert_eq!(at(1, 3, PositionEncoding::Utf16), 10);
        assert_eq!(at(1, 6, PositionEncoding::Utf8), 10);
        assert_eq!(at(1, 2, PositionEncoding::Utf32), 10);
        // Inside the surrogate pair: rounds down to the emoji's start.
        assert_eq!(at(1, 2, PositionEncoding::Utf16), 6);
        // Past the end of "ab\r\n": before the \r.
        assert_eq!(at(0, 9, PositionEncoding::Utf16), 2);
        assert_eq!(at(2, 0, PositionEncoding::Utf16), TEXT.len());
        assert_eq!(at(7, 3, PositionEncoding::Utf16), TEXT.len());
    }

    #[test]
    fn end_of_text() {
        assert_eq!(end_of(TEXT, PositionEncoding::Utf16), Position::new(2, 0));
        assert_eq!(
            end_of("a\n\u{1F600}", PositionEncoding::Utf16),
            Position::new(1, 2)
        );
        assert_eq!(end_of("", PositionEncoding::Utf8), Position::new(0, 0));
    }
}
