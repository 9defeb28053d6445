//! `cargo xtask book`: the guide in `book/`, built with mdBook into
//! `target/book`, and held to what it promises its reader.
//!
//! - mdBook is installed from crates.io into `target/tools` the first time
//!   (a pinned version, without the `serve` and `watch` features), so a
//!   fresh machine needs nothing README does not give.
//! - Every chapter with a Rust example is a doctest module of the benches
//!   crate (`benches/src/lib.rs`), so every Rust example compiles and runs
//!   in `cargo test`; a chapter with one that is not listed there fails
//!   here. C examples are run by `cargo xtask c` (`c_install.rs`), Python
//!   ones by `cargo xtask python`.
//! - No table in the book or README is wider than [`MAX_COLUMNS`].
//! - Every link in the built book resolves: a page, a file, and a heading's
//!   anchor on it; README's links to files in the repository too.
//! - README's headline figures are the lines of the table the last full
//!   `cargo xtask bench-report` wrote into the book.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::steps::{self, cargo, root, target_dir};

/// The mdBook the book is built with.
const MDBOOK: &str = "0.5.4";
/// The widest table a reader is given: wider ones are split.
const MAX_COLUMNS: usize = 8;

pub(crate) fn run() -> Result<(), String> {
    let mdbook = install()?;
    let src = root().join("book/src");
    every_rust_example_is_a_doctest(&src)?;
    tables_a_reader_can_read(&src)?;
    let out = target_dir().join("book");
    steps::run(
        "build the book (mdBook)",
        std::process::Command::new(&mdbook)
            .arg("build")
            .arg(root().join("book"))
            .arg("--dest-dir")
            .arg(&out),
    )?;
    let checked = links_resolve(&out)?;
    readme_links_resolve()?;
    headline_figures_agree()?;
    eprintln!(
        "==> book: built into {}, {checked} links resolved, every table within {MAX_COLUMNS} columns",
        out.display()
    );
    Ok(())
}

/// mdBook, from crates.io into `target/tools` once.
fn install() -> Result<PathBuf, String> {
    let tools = target_dir().join("tools");
    let bin = tools.join("bin/mdbook");
    let version = std::process::Command::new(&bin).arg("--version").output();
    if let Ok(out) = version {
        if String::from_utf8_lossy(&out.stdout).trim() == format!("mdbook v{MDBOOK}") {
            return Ok(bin);
        }
    }
    steps::run(
        "install mdBook from crates.io (once)",
        cargo()
            .args(["install", "mdbook", "--locked", "--no-default-features"])
            .args(["--version", MDBOOK])
            .arg("--root")
            .arg(&tools),
    )?;
    Ok(bin)
}

/// The files of `dir` whose names end in `.EXT`, sorted.
fn files(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, String> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    found.sort();
    Ok(found)
}

/// The book's Markdown files.
fn pages(src: &Path) -> Result<Vec<PathBuf>, String> {
    files(src, "md")
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every chapter that holds a ```rust block is included as a doctest by
/// the benches crate.
fn every_rust_example_is_a_doctest(src: &Path) -> Result<(), String> {
    let tested = read(&root().join("benches/src/lib.rs"))?;
    let mut missing = Vec::new();
    for page in pages(src)? {
        let name = page.file_name().unwrap_or_default().to_string_lossy();
        let text = read(&page)?;
        let included = tested.contains(&format!("book/src/{name}\")"));
        if text.lines().any(|l| l.starts_with("```rust")) && !included {
            missing.push(name.into_owned());
        }
    }
    match missing.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "chapters with Rust examples no doctest runs (add them to benches/src/lib.rs's \
             `mod book`): {}",
            missing.join(", ")
        )),
    }
}

/// The number of columns of a Markdown table's separator line, if `line`
/// is one.
fn columns(line: &str) -> Option<usize> {
    let t = line.trim();
    let is_separator = t.starts_with('|')
        && t.contains("---")
        && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
    is_separator.then(|| t.trim_matches('|').split('|').count())
}

fn tables_a_reader_can_read(src: &Path) -> Result<(), String> {
    let mut files = pages(src)?;
    files.push(root().join("README.md"));
    let mut wide = Vec::new();
    for file in files {
        for (n, line) in read(&file)?.lines().enumerate() {
            if let Some(count) = columns(line).filter(|c| *c > MAX_COLUMNS) {
                wide.push(format!("{}:{}: {count} columns", file.display(), n + 1));
            }
        }
    }
    match wide.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "tables wider than {MAX_COLUMNS} columns (split them):\n  {}",
            wide.join("\n  ")
        )),
    }
}

/// Every `href` and `id` of an HTML page (its text, no parser needed for
/// what mdBook writes).
fn attributes<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let key = format!(" {name}=\"");
    html.split(key.as_str())
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect()
}

/// Check every relative link of the built book: the page or file it names
/// exists, and so does the anchor on it. Returns how many were checked.
fn links_resolve(out: &Path) -> Result<usize, String> {
    // Each page read once: its ids, then its links against every page's.
    let html = files(out, "html")?
        .into_iter()
        .map(|page| read(&page).map(|text| (page, text)))
        .collect::<Result<Vec<_>, _>>()?;
    let ids: BTreeMap<&PathBuf, BTreeSet<&str>> = html
        .iter()
        .map(|(page, text)| (page, attributes(text, "id").into_iter().collect()))
        .collect();
    let (mut checked, mut broken) = (0, Vec::new());
    for (page, text) in &html {
        for href in attributes(text, "href") {
            let external = ["http://", "https://", "mailto:", "javascript:"]
                .iter()
                .any(|s| href.starts_with(s));
            if external || href.is_empty() {
                continue;
            }
            checked += 1;
            let (file, anchor) = href.split_once('#').unwrap_or((href, ""));
            let target = match file {
                "" => page.clone(),
                _ => out.join(file),
            };
            let resolves = match (target.exists(), anchor, ids.get(&target)) {
                (false, _, _) => false,
                (true, "", _) => true,
                (true, anchor, Some(ids)) => ids.contains(anchor),
                (true, _, None) => true,
            };
            if !resolves {
                let name = page.file_name().unwrap_or_default().to_string_lossy();
                broken.push(format!("{name}: {href}"));
            }
        }
    }
    match broken.is_empty() {
        true => Ok(checked),
        false => Err(format!(
            "links in the book that resolve to nothing:\n  {}",
            broken.join("\n  ")
        )),
    }
}

/// README's headline figures are the book's: each row of its table is a
/// line of the table `cargo xtask bench-report` wrote into
/// `book/src/performance-table.md`, with the same ratio to dendro.
fn headline_figures_agree() -> Result<(), String> {
    let readme = read(&root().join("README.md"))?;
    let page = read(&root().join("book/src/performance-table.md"))?;
    let cells = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let section = readme
        .split_once("\n## Headline figures\n")
        .map(|(_, rest)| rest.split("\n## ").next().unwrap_or(rest))
        .ok_or("README.md has no `## Headline figures`")?;
    let mut rows = 0;
    for line in section.lines().filter(|l| l.starts_with("| ")).skip(1) {
        let said = cells(line);
        let measured = page
            .lines()
            .map(cells)
            .find(|c| c.first() == said.first())
            .ok_or(format!(
                "README's headline {:?} is no line of the book's table",
                said[0]
            ))?;
        if measured.get(5) != said.get(1) {
            return Err(format!(
                "README's headline {:?} says {:?} beside dendro; the book's table (the last full \
                 bench-report) says {:?}",
                said[0],
                said.get(1),
                measured.get(5)
            ));
        }
        rows += 1;
    }
    match rows {
        0 => Err("README's `## Headline figures` has no table".into()),
        _ => Ok(()),
    }
}

/// README's links to files of the repository name files that exist.
fn readme_links_resolve() -> Result<(), String> {
    let readme = read(&root().join("README.md"))?;
    let mut broken = Vec::new();
    for part in readme.split("](").skip(1) {
        let Some(link) = part.split(')').next() else {
            continue;
        };
        if link.starts_with("http") || link.starts_with('#') {
            continue;
        }
        let file = link.split('#').next().unwrap_or(link);
        if !root().join(file).exists() {
            broken.push(link.to_string());
        }
    }
    match broken.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "README.md links to files that do not exist: {}",
            broken.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_separator_line_counts_its_columns() {
        assert_eq!(columns("|---|---:|:---|"), Some(3));
        assert_eq!(columns("| a | b |"), None);
        assert_eq!(columns("text --- text"), None);
    }

    #[test]
    fn attributes_are_read_from_html() {
        let html = r##"<a href="x.html#y">x</a> <h2 id="y">Y</h2> <a href="#z">"##;
        assert_eq!(attributes(html, "href"), ["x.html#y", "#z"]);
        assert_eq!(attributes(html, "id"), ["y"]);
    }
}
