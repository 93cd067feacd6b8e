//! The generated repository the `big_repo` benchmark searches: 200,000 files made from a
//! fixed seed, so every run and every machine searches the same bytes.
//!
//! Most files are source-like text in nested directories (Rust, TypeScript, JavaScript,
//! Python, Go, Java, C, Markdown, JSON, TOML, YAML), a few hundred bytes to tens of KB each;
//! a few are binary. About 25,000 sit in folders `.gitignore` leaves out (`target/`,
//! `node_modules/`, `build/`, and `generated/` plus `*.snap` through nested `.gitignore`
//! files), a few hundred are hidden. [`RARE_TOKEN`] appears in about 200 files that a
//! search sees, and in ignored and hidden ones it must not see; [`COMMON_PATTERN`] matches
//! some tens of thousands of lines. Every file gets a pseudo-random modification time, so
//! "newest first" has an order to keep. The tree is a git repository (`git init`, nothing
//! committed) so that ripgrep applies `.gitignore` as the tools do.
//!
//! The tree is made once and kept under the cargo target directory; a marker file holding
//! [`GENERATOR_VERSION`] is written last, so a changed generator or an interrupted run
//! makes it again.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Bump when anything below changes what is generated.
pub const GENERATOR_VERSION: u32 = 1;
/// Files in the tree, `.gitignore` files included.
pub const TOTAL_FILES: usize = 200_000;
/// A token in about 200 of the files a search sees.
pub const RARE_TOKEN: &str = "zebraQuokka42";
/// A regex matching about one line in 400 of the source files.
pub const COMMON_PATTERN: &str = r"TODO\(perf\)";
/// The text [`COMMON_PATTERN`] matches.
const COMMON_TEXT: &str = "TODO(perf)";
/// The marker naming the generator version that made the tree; hidden, so no search
/// sees it.
const MARKER: &str = ".larik-bench-tree";
const SEED: u64 = 0x1a41_c0de_2026_1204;

/// SplitMix64: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    /// A uniform fraction in [0, 1).
    fn fraction(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const WORDS: &[&str] = &[
    "account", "adapter", "agent", "alloc", "audit", "batch", "buffer", "cache", "channel",
    "client", "codec", "config", "context", "cursor", "data", "decode", "delta", "device",
    "digest", "driver", "encode", "engine", "entry", "event", "export", "filter", "frame",
    "gateway", "graph", "handle", "header", "index", "input", "kernel", "layout", "ledger",
    "limit", "loader", "matrix", "merge", "metric", "model", "module", "node", "offset", "order",
    "output", "packet", "parser", "patch", "policy", "pool", "queue", "range", "reader", "record",
    "region", "render", "report", "request", "route", "sample", "schema", "scope", "session",
    "shard", "signal", "socket", "source", "span", "state", "store", "stream", "symbol", "table",
    "task", "token", "trace", "tree", "update", "user", "value", "vector", "view", "window",
    "worker", "writer",
];

const TYPES: &[&str] = &[
    "Config", "Context", "Buffer", "Request", "Response", "Handle", "Entry", "Record", "State",
    "Event", "Session", "Store", "Table", "Stream", "Report", "Error", "Options", "Builder",
];

/// A kind of generated file: its extension and how its lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Rust,
    TypeScript,
    Tsx,
    JavaScript,
    Python,
    Go,
    Java,
    C,
    Header,
    Markdown,
    Json,
    Toml,
    Yaml,
    /// A generated `.d` or `.snap` file: plain lines.
    Plain(&'static str),
}

impl Lang {
    fn extension(self) -> &'static str {
        match self {
            Lang::Rust => "rs",
            Lang::TypeScript => "ts",
            Lang::Tsx => "tsx",
            Lang::JavaScript => "js",
            Lang::Python => "py",
            Lang::Go => "go",
            Lang::Java => "java",
            Lang::C => "c",
            Lang::Header => "h",
            Lang::Markdown => "md",
            Lang::Json => "json",
            Lang::Toml => "toml",
            Lang::Yaml => "yml",
            Lang::Plain(extension) => extension,
        }
    }

    fn comment(self) -> &'static str {
        match self {
            Lang::Python | Lang::Toml | Lang::Yaml => "#",
            Lang::Markdown | Lang::Plain(_) => "",
            _ => "//",
        }
    }
}

/// What one planned file holds.
#[derive(Debug, Clone)]
enum Content {
    /// Generated text in `lang`, `size` bytes or a little more, with the rare token when
    /// `rare` is set.
    Text { lang: Lang, size: usize, rare: bool },
    /// Bytes with NULs, as an image would have.
    Binary { size: usize },
    /// Fixed text (a `.gitignore`).
    Fixed(&'static str),
}

/// One file of the plan: where it goes, what it holds, its seed and modification time.
#[derive(Debug, Clone)]
struct Planned {
    path: PathBuf,
    content: Content,
    seed: u64,
    modified: SystemTime,
}

/// The files to write, built from the seed alone.
struct Plan {
    rng: Rng,
    files: Vec<Planned>,
}

const ROOT_GITIGNORE: &str = "target/\nnode_modules/\nbuild/\n*.log\n";
const SERVICE_GITIGNORE: &str = "generated/\n*.snap\n";

/// Files per area of visible source; the rest of [`TOTAL_FILES`] after the ignored,
/// hidden and binary files goes to the last area.
const AREAS: &[(&str, &[Lang], usize)] = &[
    (
        "crates",
        &[
            Lang::Rust,
            Lang::Rust,
            Lang::Rust,
            Lang::Toml,
            Lang::Markdown,
        ],
        52_000,
    ),
    (
        "web/packages",
        &[
            Lang::TypeScript,
            Lang::Tsx,
            Lang::JavaScript,
            Lang::Json,
            Lang::Markdown,
        ],
        40_000,
    ),
    (
        "services",
        &[Lang::Go, Lang::Python, Lang::Yaml, Lang::Markdown],
        30_000,
    ),
    (
        "platform/java",
        &[Lang::Java, Lang::Java, Lang::Yaml],
        20_000,
    ),
    ("native", &[Lang::C, Lang::Header, Lang::Markdown], 0),
];

impl Plan {
    fn new() -> Self {
        Plan {
            rng: Rng::new(SEED),
            files: Vec::new(),
        }
    }

    fn add(&mut self, path: PathBuf, content: Content) {
        let seed = self.rng.next();
        // Modification times spread over a year, to the nanosecond, so few tie.
        let offset = Duration::from_nanos(self.rng.next() % (365 * 24 * 3600 * 1_000_000_000));
        let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600) + offset;
        self.files.push(Planned {
            path,
            content,
            seed,
            modified,
        });
    }

    /// A size from a few hundred bytes to tens of KB, small files commonest.
    fn size(&mut self) -> usize {
        let (smallest, largest) = (250.0_f64, 24_000.0_f64);
        (smallest * (largest / smallest).powf(self.rng.fraction())) as usize
    }

    /// Text in `lang` with the rare token in about one file in `rare_one_in`.
    fn text(&mut self, lang: Lang, rare_one_in: usize) -> Content {
        Content::Text {
            lang,
            size: self.size(),
            rare: self.rng.below(rare_one_in) == 0,
        }
    }

    /// `count` files under `dir` in nested directories, each in one of `langs`; names
    /// are unique within their directory.
    fn fill(&mut self, dir: &Path, langs: &[Lang], count: usize, depth: usize, rare_one_in: usize) {
        if count == 0 {
            return;
        }
        let here = if count <= 40 || depth >= 5 {
            count
        } else {
            self.rng.below(12).min(count)
        };
        let mut names = BTreeSet::new();
        for _ in 0..here {
            let lang = langs[self.rng.below(langs.len())];
            let mut name = format!(
                "{}_{}.{}",
                self.rng.pick(WORDS),
                self.rng.pick(WORDS),
                lang.extension()
            );
            while names.contains(&name) {
                name = format!("{}{}", self.rng.below(10), name);
            }
            names.insert(name.clone());
            let content = self.text(lang, rare_one_in);
            self.add(dir.join(name), content);
        }
        let rest = count - here;
        if rest == 0 {
            return;
        }
        let branches = 2 + self.rng.below(7);
        let weights: Vec<usize> = (0..branches).map(|_| 1 + self.rng.below(10)).collect();
        let total_weight: usize = weights.iter().sum();
        let mut given = 0;
        let mut dirs = BTreeSet::new();
        for (index, weight) in weights.iter().enumerate() {
            let share = if index + 1 == branches {
                rest - given
            } else {
                rest * weight / total_weight
            };
            given += share;
            let mut name = self.rng.pick(WORDS).to_string();
            while dirs.contains(&name) {
                name = format!("{name}{}", self.rng.below(10));
            }
            dirs.insert(name.clone());
            self.fill(&dir.join(name), langs, share, depth + 1, rare_one_in);
        }
    }

    /// Every file of the tree, in a fixed order.
    fn build() -> Vec<Planned> {
        let mut plan = Plan::new();
        plan.add(".gitignore".into(), Content::Fixed(ROOT_GITIGNORE));

        // Ignored: build output, dependencies, generated code; the rare token turns up
        // here too and must not be found.
        plan.fill(
            Path::new("target/debug/deps"),
            &[Lang::Plain("d"), Lang::Rust],
            7_000,
            2,
            300,
        );
        plan.fill(
            Path::new("target/release/build"),
            &[Lang::Rust, Lang::Json],
            5_000,
            2,
            300,
        );
        plan.fill(
            Path::new("web/node_modules"),
            &[
                Lang::JavaScript,
                Lang::Json,
                Lang::TypeScript,
                Lang::Markdown,
            ],
            9_000,
            1,
            300,
        );
        for package in ["admin", "shop", "docs-site", "ui-kit"] {
            let dir = PathBuf::from(format!("web/packages/{package}/build"));
            plan.fill(&dir, &[Lang::JavaScript, Lang::Json], 500, 3, 300);
        }
        for service in ["billing", "search", "notify", "ingest"] {
            let dir = PathBuf::from(format!("services/{service}"));
            plan.add(dir.join(".gitignore"), Content::Fixed(SERVICE_GITIGNORE));
            plan.fill(
                &dir.join("generated"),
                &[Lang::Go, Lang::Python],
                400,
                2,
                300,
            );
            for n in 0..100 {
                let content = plan.text(Lang::Plain("snap"), 300);
                plan.add(
                    dir.join(format!("tests/snapshots/case_{n:03}.snap")),
                    content,
                );
            }
        }
        plan.add(
            "logs/build.log".into(),
            Content::Fixed("zebraQuokka42 in a log\n"),
        );

        // Hidden: configuration a search skips.
        plan.fill(Path::new(".github/workflows"), &[Lang::Yaml], 40, 1, 10);
        plan.fill(Path::new(".config"), &[Lang::Toml, Lang::Json], 160, 1, 10);
        for area in ["crates/core", "web/packages/shop", "services/search"] {
            plan.fill(&Path::new(area).join(".cache"), &[Lang::Json], 100, 2, 10);
            let content = plan.text(Lang::Toml, 1);
            plan.add(Path::new(area).join(".env.example"), content);
        }

        // Binary files: images in the web packages.
        for n in 0..60 {
            let size = 2_000 + plan.rng.below(30_000);
            plan.add(
                format!("web/packages/assets/img/icon_{n:02}.png").into(),
                Content::Binary { size },
            );
        }

        // Visible source, the bulk of the tree.
        let before_source = plan.files.len();
        let fixed: usize = AREAS.iter().map(|(_, _, count)| count).sum();
        let last = TOTAL_FILES - before_source - fixed;
        for (area, langs, count) in AREAS {
            let count = if *count == 0 { last } else { *count };
            plan.fill(Path::new(area), langs, count, 1, 850);
        }
        assert_eq!(plan.files.len(), TOTAL_FILES, "the plan's file count");
        plan.files
    }
}

/// The lines of a source-like file.
fn line(lang: Lang, rng: &mut Rng) -> String {
    let (a, b, c) = (rng.pick(WORDS), rng.pick(WORDS), rng.pick(WORDS));
    let t = rng.pick(TYPES);
    let kind = rng.below(10);
    match lang {
        Lang::Rust => match kind {
            0 => format!("pub fn {a}_{b}(&self, {c}: &{t}) -> Result<{t}, Error> {{"),
            1 => format!("/// Returns the {a} of the {b} for this {c}."),
            2 => "}".to_string(),
            3 => format!("use crate::{a}::{{{t}, {b}_{c}}};"),
            _ => format!("    let {a}_{b} = self.{c}.{a}({b}).map(|{c}| {c}.len());"),
        },
        Lang::TypeScript | Lang::Tsx | Lang::JavaScript => match kind {
            0 => format!("export function {a}{t}({b}: {t}, {c}?: number) {{"),
            1 => format!("import {{ {t} }} from \"../{a}/{b}\";"),
            2 => "}".to_string(),
            3 if lang == Lang::Tsx => format!("  return <{t} {a}={{{b}}} onChange={{{c}}} />;"),
            _ => format!(
                "  const {a} = await {b}.{c}({a}, {{ limit: {} }});",
                rng.below(500)
            ),
        },
        Lang::Python => match kind {
            0 => format!("def {a}_{b}(self, {c}: {t}) -> {t}:"),
            1 => format!("    \"\"\"Return the {a} of {b}.\"\"\""),
            2 => format!("from .{a} import {t}"),
            _ => format!("    {a} = self.{b}.get(\"{c}\", {})", rng.below(100)),
        },
        Lang::Go => match kind {
            0 => format!(
                "func (s *{t}) {}{}(ctx context.Context) error {{",
                upper(a),
                upper(b)
            ),
            1 => "}".to_string(),
            2 => format!("\t// {a} keeps the {b} of each {c}."),
            _ => format!("\t{a}, err := s.{b}.{}(ctx, {c})", upper(c)),
        },
        Lang::Java => match kind {
            0 => format!("    public {t} {a}{}({t} {c}) {{", upper(b)),
            1 => "    }".to_string(),
            2 => format!("import com.example.{a}.{t};"),
            _ => format!(
                "        {t} {a} = this.{b}.{c}({a}Count + {});",
                rng.below(64)
            ),
        },
        Lang::C | Lang::Header => match kind {
            0 => format!("static int {a}_{b}(struct {c} *{a}, size_t len) {{"),
            1 => "}".to_string(),
            2 => format!("#include \"{a}/{b}.h\""),
            _ => format!("    {a}->{b} = {c}_{a}({b}, len + {});", rng.below(32)),
        },
        Lang::Markdown => match kind {
            0 => format!("## The {a} {b}"),
            1 => String::new(),
            _ => format!("The {a} reads each {b} from the {c} and writes a {t} back."),
        },
        Lang::Json => format!(
            "  \"{a}_{b}\": {{ \"{c}\": {}, \"kind\": \"{t}\" }},",
            rng.below(1000)
        ),
        Lang::Toml => format!("{a}_{b} = \"{c}-{}\"", rng.below(100)),
        Lang::Yaml => format!("  {a}_{b}: {c}-{}", rng.below(100)),
        Lang::Plain(_) => format!("{a} {b} {c} {t} {}", rng.below(100_000)),
    }
}

fn upper(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// The bytes of one planned file.
fn bytes(file: &Planned) -> Vec<u8> {
    let mut rng = Rng::new(file.seed);
    match &file.content {
        Content::Fixed(text) => text.as_bytes().to_vec(),
        Content::Binary { size } => {
            let mut out = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
            while out.len() < *size {
                out.extend_from_slice(&rng.next().to_le_bytes());
            }
            out
        }
        Content::Text { lang, size, rare } => {
            let mut out = String::with_capacity(size + 200);
            let rare_line = rare.then(|| rng.below(size / 40 + 1));
            let mut number = 0;
            while out.len() < *size {
                if rare_line == Some(number) {
                    out.push_str(&format!("{} uses {RARE_TOKEN} here\n", lang.comment()));
                }
                if rng.below(400) == 0 {
                    let words = (rng.pick(WORDS), rng.pick(WORDS));
                    out.push_str(&format!(
                        "{} {COMMON_TEXT}: the {} {} is slow\n",
                        lang.comment(),
                        words.0,
                        words.1
                    ));
                }
                out.push_str(&line(*lang, &mut rng));
                out.push('\n');
                number += 1;
            }
            // A file too short for its chosen line still carries the token.
            if rare_line.is_some_and(|line| line >= number) {
                out.push_str(&format!("{} uses {RARE_TOKEN} here\n", lang.comment()));
            }
            out.into_bytes()
        }
    }
}

/// The generated repository at `root`, made if it is missing or was made by another
/// generator version.
///
/// # Panics
/// When the tree cannot be written or `git init` fails: the benchmark cannot run.
pub fn ensure(root: &Path) {
    let marker = root.join(MARKER);
    let wanted = format!("version {GENERATOR_VERSION}, {TOTAL_FILES} files\n");
    if std::fs::read_to_string(&marker).is_ok_and(|found| found == wanted) {
        return;
    }
    if root.exists() {
        eprintln!("removing the old tree at {}", root.display());
        std::fs::remove_dir_all(root).expect("remove the old tree");
    }
    eprintln!(
        "generating {TOTAL_FILES} files under {} (once)",
        root.display()
    );
    let files = Plan::build();
    let dirs: BTreeSet<PathBuf> = files
        .iter()
        .filter_map(|file| file.path.parent().map(|parent| root.join(parent)))
        .collect();
    for dir in &dirs {
        std::fs::create_dir_all(dir).expect("create a directory");
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = files.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for part in files.chunks(chunk) {
            scope.spawn(move || {
                for file in part {
                    let path = root.join(&file.path);
                    let mut out = File::create(&path).expect("create a file");
                    out.write_all(&bytes(file)).expect("write a file");
                    out.set_modified(file.modified)
                        .expect("set a modification time");
                }
            });
        }
    });
    larik_testkit::git::git(root, &["init", "--quiet"]);
    std::fs::write(&marker, wanted).expect("write the marker");
}
