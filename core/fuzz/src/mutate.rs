//! Mutations of a corpus input: byte-level edits, the format's own tokens spliced in, and
//! pieces of other inputs, from a seeded generator so a run can be repeated.

/// Inputs are kept below this size; parsers of larger inputs are measured elsewhere.
pub(crate) const MAX_LEN: usize = 64 * 1024;

/// Fragments that break parsers of any text format: quotes, brackets, line ends, byte
/// order marks, invalid UTF-8, lone surrogates, huge and negative numbers.
const COMMON_TOKENS: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"\n",
    b"\r\n",
    b"\r",
    b"\0",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\\u0000",
    b"\\ud800",
    b"null",
    b"true",
    b"-1",
    b"0",
    b"1e400",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"\"\"",
    b"{}",
    b"[]",
    b"*",
    b"**",
    b"..",
    b"/",
    b"\\",
    b"$(",
    b"`",
    b";",
    b"&&",
    b"|",
    b"---",
    b"\t",
    b" ",
    b"\xf0\x9f\xa6\x80",
    b"e\xcc\x81",
];

/// A small, fast generator (xorshift64*): fuzzing needs speed and repeatability, not
/// cryptographic quality.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator started from `seed` (any value; zero is moved off).
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `bound` (`bound` > 0).
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// Makes a new input from `base`: one to eight edits, each a bit flip, a random byte, a
/// deletion, a duplication, a token of `tokens` or of [`COMMON_TOKENS`], a piece of
/// `other`, or a cut.
pub(crate) fn mutate(base: &[u8], other: &[u8], tokens: &[&str], rng: &mut Rng) -> Vec<u8> {
    let mut data = base.to_vec();
    let edits = 1 + rng.below(8);
    for _ in 0..edits {
        match rng.below(10) {
            0 if !data.is_empty() => {
                let at = rng.below(data.len());
                data[at] ^= 1 << rng.below(8);
            }
            1 if !data.is_empty() => {
                let at = rng.below(data.len());
                data[at] = rng.next() as u8;
            }
            2 if !data.is_empty() => {
                let start = rng.below(data.len());
                let len = 1 + rng.below((data.len() - start).min(64));
                data.drain(start..start + len);
            }
            3 if !data.is_empty() => {
                let start = rng.below(data.len());
                let len = 1 + rng.below((data.len() - start).min(256));
                let piece = data[start..start + len].to_vec();
                let at = rng.below(data.len() + 1);
                splice(&mut data, at, &piece);
            }
            4 | 5 => {
                let token: &[u8] = if !tokens.is_empty() && rng.chance(2) {
                    tokens[rng.below(tokens.len())].as_bytes()
                } else {
                    COMMON_TOKENS[rng.below(COMMON_TOKENS.len())]
                };
                let at = boundary(&data, rng);
                if rng.chance(3) && !data.is_empty() {
                    // Replace a run instead of inserting, so sizes also shrink.
                    let end = (at + 1 + rng.below(16)).min(data.len());
                    data.splice(at.min(data.len())..end, token.iter().copied());
                } else {
                    splice(&mut data, at, token);
                }
            }
            6 if !other.is_empty() => {
                let start = rng.below(other.len());
                let len = 1 + rng.below((other.len() - start).min(512));
                let at = boundary(&data, rng);
                splice(&mut data, at, &other[start..start + len]);
            }
            7 if !data.is_empty() => {
                let cut = rng.below(data.len());
                data.truncate(cut);
            }
            8 => {
                // A run of one byte: long lines, deep nesting.
                let byte = if rng.chance(2) {
                    b"[{\"\\ \n"[rng.below(6)]
                } else {
                    rng.next() as u8
                };
                let longest = if rng.chance(8) { 4096 } else { 32 };
                let len = 1 + rng.below(longest);
                let at = boundary(&data, rng);
                splice(&mut data, at, &vec![byte; len]);
            }
            _ => {
                // A number rewritten: digits are where counts and offsets live.
                if let Some(at) = digit_at(&data, rng) {
                    let replacement: &[u8] = match rng.below(5) {
                        0 => b"0",
                        1 => b"-1",
                        2 => b"4294967296",
                        3 => b"99999999999999999999",
                        _ => b"1.5",
                    };
                    data.splice(at..at + 1, replacement.iter().copied());
                }
            }
        }
    }
    data.truncate(MAX_LEN);
    data
}

/// Where to insert: often at a line or token edge, where formats split.
fn boundary(data: &[u8], rng: &mut Rng) -> usize {
    if data.is_empty() {
        return 0;
    }
    let at = rng.below(data.len() + 1);
    if rng.chance(2)
        && let Some(offset) = data[at..]
            .iter()
            .position(|&b| matches!(b, b'\n' | b',' | b':' | b'"' | b' '))
    {
        return at + offset + 1;
    }
    at
}

/// The position of a digit, searched from a random point.
fn digit_at(data: &[u8], rng: &mut Rng) -> Option<usize> {
    if data.is_empty() {
        return None;
    }
    let start = rng.below(data.len());
    data[start..]
        .iter()
        .position(u8::is_ascii_digit)
        .map(|offset| start + offset)
        .or_else(|| data[..start].iter().position(u8::is_ascii_digit))
}

fn splice(data: &mut Vec<u8>, at: usize, piece: &[u8]) {
    let at = at.min(data.len());
    data.splice(at..at, piece.iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let base = b"data: {\"type\":\"message_start\"}\n\n";
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..50)
                .map(|_| mutate(base, b"other", &["event: "], &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn inputs_stay_below_the_size_cap() {
        let mut rng = Rng::new(1);
        let mut data = vec![b'x'; MAX_LEN];
        for _ in 0..200 {
            data = mutate(&data, &data, &[], &mut rng);
            assert!(data.len() <= MAX_LEN);
        }
    }
}
