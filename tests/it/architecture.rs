//! What the compiler cannot check. The layering between the crates
//! (units ← stats ← engine ← the app) is the compiler's: a crate cannot
//! name one that does not depend on it. Left here: inside each crate, no
//! circles (at every level of the module tree, the sibling modules'
//! imports point one way), and the app's top-level modules in their
//! layers (docs/architecture.md); `unsafe` nowhere but the engine's `sys`;
//! and the engine's manifest free of the front ends' crates.
//!
//! Each file of a crate's `src/` is read for the paths it names (`use` trees and paths
//! written inline, starting at `crate::`, `super::`, `self::` or a child
//! module), outside its `#[cfg(test)]` items. A path is followed through
//! `pub use` re-exports to the file that defines the item. An import from
//! file X to file Y is then an edge between the two siblings under their
//! lowest common ancestor that contain X and Y: a module may use what its
//! parent holds and a parent its children (that is nesting, not a circle),
//! but `calibrate → cli → report → calibrate` or `config ↔ spread` is.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path from the crate root: `["engine", "client"]`.
type Module = Vec<String>;

struct Source {
    module: Module,
    /// Whether the file is a directory's `mod.rs` (or the crate root).
    dir: bool,
    code: String,
}

/// The workspace's root (the app's package).
fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Each crate's `src/`: the app's, then those under `crates/`.
fn crate_sources() -> Vec<PathBuf> {
    let mut roots = vec![workspace().join("src")];
    for entry in std::fs::read_dir(workspace().join("crates")).unwrap() {
        roots.push(entry.unwrap().path().join("src"));
    }
    roots
}

/// The files of one crate, `root` its `src/`.
fn sources(root: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    walk(root, &mut files);
    let all: Vec<Source> = files
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "main.rs"))
        .map(|path| {
            let rel = path.strip_prefix(root).unwrap().with_extension("");
            let mut module: Module = rel.iter().map(|c| c.to_string_lossy().into()).collect();
            let dir = matches!(module.last().map(String::as_str), Some("mod" | "lib"));
            if dir {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            Source {
                module,
                dir,
                code: strip_comments_and_strings(&text),
            }
        })
        .collect();
    // Files that are test modules (`#[cfg(test)] mod tests;`) go whole.
    let mut test_only = Vec::new();
    for src in &all {
        let mut rest = src.code.as_str();
        while let Some(at) = rest.find("#[cfg(test)]") {
            rest = &rest[at + 12..];
            let item: String = rest
                .chars()
                .take_while(|c| *c != ';' && *c != '{')
                .collect();
            if let Some(name) = item.trim().strip_prefix("mod ").map(str::trim) {
                let mut m = src.module.clone();
                m.push(name.to_string());
                test_only.push(m);
            }
        }
    }
    all.into_iter()
        .filter(|s| !test_only.iter().any(|t| s.module.starts_with(t)))
        .map(|s| Source {
            code: without_tests(&s.code),
            ..s
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Code only: comments, string and char literals blanked, so a path in a
/// doc comment or a message is not an import.
fn strip_comments_and_strings(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            i = end;
        } else if b[i] == b'"' || (b[i] == b'r' && b.get(i + 1) == Some(&b'"')) {
            i = skip_string(b, i);
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            i += text[i + 2..].find('\'').map_or(b.len(), |e| e + 3);
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn skip_string(b: &[u8], mut i: usize) -> usize {
    if b[i] == b'r' {
        i += 2;
        while i < b.len() && b[i] != b'"' {
            i += 1;
        }
        return i + 1;
    }
    i += 1;
    while i < b.len() && b[i] != b'"' {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    i + 1
}

/// Removes every item under `#[cfg(test)]` (a test may reach anywhere).
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        // The item ends at `;` (a `mod tests;`) or its brace block.
        let semi = after.find(';');
        let brace = after.find('{');
        rest = match (semi, brace) {
            (Some(s), Some(b)) if s < b => &after[s + 1..],
            (_, Some(b)) => &after[b + block_len(&after[b..])..],
            _ => "",
        };
    }
    out.push_str(rest);
    out
}

fn block_len(s: &str) -> usize {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// Every path a `use` tree names, expanded: `a::{b, c::d}` → `a::b`,
/// `a::c::d`. Also whether the statement is a re-export (`pub use`).
fn use_statements(code: &str) -> Vec<(bool, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        let before = rest[..at].trim_end();
        let public = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        let stmt_end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
        // `a as b` keeps its `a`: the rename is marked before spaces go.
        let tree: String = rest[at + 3..stmt_end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace(" as ", "@")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let mut paths = Vec::new();
        expand("", &tree, &mut paths);
        out.push((public, paths));
        rest = &rest[stmt_end.min(rest.len())..];
        if rest.is_empty() {
            break;
        }
        rest = &rest[1..];
    }
    out
}

fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(word) {
        let at = from + i;
        let ok_before = at == 0 || !is_ident(s.as_bytes()[at - 1]);
        let ok_after = s
            .as_bytes()
            .get(at + word.len())
            .is_some_and(|c| c.is_ascii_whitespace());
        if ok_before && ok_after {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let join = |p: &str| {
        if prefix.is_empty() {
            p.to_string()
        } else {
            format!("{prefix}::{p}")
        }
    };
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::");
        let inner = &tree[open + 1..tree.len() - 1];
        for part in split_top(inner) {
            expand(&join(head), part, out);
        }
    } else if tree == "self" {
        out.push(prefix.to_string());
    } else if !tree.is_empty() {
        let path = tree.split_once('@').map_or(tree, |(p, _)| p);
        out.push(join(path.trim_end_matches("::")));
    }
}

/// Splits `a, b::{c, d}, e` at the commas outside braces.
fn split_top(s: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Paths written in code: `crate::a::b`, `super::x`, `self::y`, `child::z`.
fn inline_paths(code: &str, children: &BTreeSet<String>) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident(b[i]) && (i == 0 || !is_ident(b[i - 1]) && b[i - 1] != b':') {
            let mut j = i;
            while j < b.len()
                && (is_ident(b[j])
                    || b[j..].starts_with(b"::") && b.get(j + 2).is_some_and(|c| is_ident(*c)))
            {
                j += if b[j] == b':' { 2 } else { 1 };
            }
            let path = &code[i..j];
            let first = path.split("::").next().unwrap_or("");
            if path.contains("::")
                && (matches!(first, "crate" | "super" | "self") || children.contains(first))
            {
                out.push(path.to_string());
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// `path` as seen from `module`, made absolute (without `crate`).
fn absolute(from: &Source, path: &str, children: &BTreeSet<String>) -> Option<Module> {
    let mut parts = path.split("::").map(str::to_string).peekable();
    let mut base: Module = match parts.peek().map(String::as_str) {
        Some("crate") => {
            parts.next();
            Vec::new()
        }
        Some("self" | "super") => {
            // `self` of a file `a/b.rs` is `a::b`; `super` is `a`.
            let mut m = from.module.clone();
            while parts.peek().map(String::as_str) == Some("super") {
                parts.next();
                m.pop()?;
            }
            if parts.peek().map(String::as_str) == Some("self") {
                parts.next();
            }
            m
        }
        Some(first) if children.contains(first) => from.module.clone(),
        _ => return None,
    };
    base.extend(parts);
    Some(base)
}

struct Tree {
    modules: BTreeSet<Module>,
    /// (module, name) → the path a `pub use` in that module points to.
    reexports: BTreeMap<(Module, String), Module>,
}

impl Tree {
    /// The file that defines what `path` names, following re-exports.
    fn defining(&self, path: &Module) -> Module {
        let mut path = path.clone();
        for _ in 0..16 {
            let mut n = path.len();
            while n > 0 && !self.modules.contains(&path[..n]) {
                n -= 1;
            }
            let module = path[..n].to_vec();
            let Some(name) = path.get(n) else {
                return module;
            };
            match self.reexports.get(&(module.clone(), name.clone())) {
                Some(target) => {
                    let mut next = target.clone();
                    next.extend(path[n + 1..].iter().cloned());
                    path = next;
                }
                None => return module,
            }
        }
        path
    }
}

fn children_of(src: &Source, all: &[Source]) -> BTreeSet<String> {
    all.iter()
        .filter(|s| s.module.len() == src.module.len() + 1 && s.module.starts_with(&src.module))
        .filter(|_| src.dir)
        .map(|s| s.module.last().unwrap().clone())
        .collect()
}

/// Edges between siblings: (parent, from, to) → one file-level example.
fn sibling_edges(all: &[Source]) -> BTreeMap<(Module, String, String), String> {
    let modules = all.iter().map(|s| s.module.clone()).collect();
    let mut tree = Tree {
        modules,
        reexports: BTreeMap::new(),
    };
    let mut imports = Vec::new();
    for src in all {
        let children = children_of(src, all);
        for (public, paths) in use_statements(&src.code) {
            for p in paths {
                let Some(abs) = absolute(src, &p, &children) else {
                    continue;
                };
                if public {
                    let name = abs.last().unwrap().clone();
                    tree.reexports
                        .insert((src.module.clone(), name), abs.clone());
                }
                imports.push((src.module.clone(), abs, public));
            }
        }
        for p in inline_paths(&src.code, &children) {
            if let Some(abs) = absolute(src, &p, &children) {
                imports.push((src.module.clone(), abs, false));
            }
        }
    }
    let mut edges = BTreeMap::new();
    for (from, path, reexport) in imports {
        if reexport {
            continue;
        }
        let to = tree.defining(&path);
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if common == from.len() || common == to.len() {
            continue; // a module and its ancestor: nesting
        }
        let key = (
            from[..common].to_vec(),
            from[common].clone(),
            to[common].clone(),
        );
        edges
            .entry(key)
            .or_insert_with(|| format!("{} uses {}", from.join("::"), path.join("::")));
    }
    edges
}

/// Strongly connected groups of more than one sibling.
fn circles(edges: &BTreeMap<(Module, String, String), String>) -> Vec<Vec<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (parent, from, to) in edges.keys() {
        let name = |m: &str| {
            let mut p = parent.clone();
            p.push(m.to_string());
            p.join("::")
        };
        graph.entry(name(from)).or_default().insert(name(to));
        graph.entry(name(to)).or_default();
    }
    let reach = |start: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(n) = stack.pop() {
            for m in &graph[&n] {
                if seen.insert(m.clone()) {
                    stack.push(m.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<_, _> = graph.keys().map(|n| (n.clone(), reach(n))).collect();
    let mut groups: Vec<Vec<String>> = Vec::new();
    for n in graph.keys() {
        let group: Vec<String> = graph
            .keys()
            .filter(|m| reachable[n].contains(*m) && reachable[*m].contains(n))
            .cloned()
            .collect();
        if group.len() > 1 && !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

#[test]
fn no_module_imports_in_a_circle() {
    let mut read = 0;
    let mut explain = String::new();
    for root in crate_sources() {
        let all = sources(&root);
        read += all.len();
        explain.push_str(&circles_explained(&all));
    }
    assert!(read > 50, "read the sources ({read} files)");
    assert!(explain.is_empty(), "imports that go round:{explain}");
}

/// Each circle among `all`'s modules, with an import of each edge.
fn circles_explained(all: &[Source]) -> String {
    let edges = sibling_edges(all);
    let found = circles(&edges);
    let mut explain = String::new();
    for group in &found {
        explain.push_str(&format!("\ncircle: {}\n", group.join(", ")));
        for ((parent, from, to), example) in &edges {
            let name = |m: &str| {
                let mut p = parent.clone();
                p.push(m.to_string());
                p.join("::")
            };
            if group.contains(&name(from)) && group.contains(&name(to)) {
                explain.push_str(&format!("  {} → {}: {example}\n", name(from), name(to)));
            }
        }
    }
    explain
}

/// The app's top-level modules, from the front ends down to the leaves.
/// An import may point down the list or stay in its layer, never up.
const LAYERS: &[&[&str]] = &[
    &["agent"],
    &["ui", "commands", "calibrate"],
    &["report"],
    &["session"],
    &["plan"],
    &["error"],
    &["cli", "config"],
    &["packet_log", "hdr_log"],
    &["console", "files"],
];

#[test]
fn imports_point_down_the_layers() {
    let all = sources(&workspace().join("src"));
    let layer = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let mut wrong = String::new();
    for ((parent, from, to), example) in sibling_edges(&all) {
        if !parent.is_empty() {
            continue;
        }
        let (Some(a), Some(b)) = (layer(&from), layer(&to)) else {
            wrong.push_str(&format!("\n  {from} or {to} has no layer in LAYERS"));
            continue;
        };
        if a > b {
            wrong.push_str(&format!("\n  {from} → {to} points up: {example}"));
        }
    }
    assert!(wrong.is_empty(), "imports against the layers:{wrong}");
}

/// The checker sees a circle when there is one (so its silence means
/// something): a made-up pair of files that import each other.
#[test]
fn the_checker_finds_a_circle_it_is_shown() {
    let file = |m: &[&str], code: &str| Source {
        module: m.iter().map(|s| s.to_string()).collect(),
        dir: false,
        code: code.into(),
    };
    let all = vec![
        file(&["a"], "use crate::b::B;\npub struct A;"),
        file(&["b"], "pub struct B(crate::c::C);"),
        file(&["c"], "use super::a::{self, A};\npub struct C;"),
        file(&["d"], "use crate::a::A;"),
    ];
    let found = circles(&sibling_edges(&all));
    assert_eq!(found, vec![vec!["a".to_string(), "b".into(), "c".into()]]);
}

/// Re-exports are followed to the file that defines the item, and a
/// child using its parent is nesting, not a circle.
#[test]
fn reexports_are_followed_and_nesting_is_not_a_circle() {
    let file = |m: &[&str], dir: bool, code: &str| Source {
        module: m.iter().map(|s| s.to_string()).collect(),
        dir,
        code: code.into(),
    };
    let all = vec![
        file(
            &["e"],
            true,
            "mod x;\nmod y;\npub use x::X;\npub struct Config;\nfn run() { y::go(); }",
        ),
        file(&["e", "x"], false, "use super::Config;\npub struct X;"),
        file(&["e", "y"], false, "use super::X;\npub fn go() {}"),
        file(&["f"], false, "use crate::e::X;"),
    ];
    let edges = sibling_edges(&all);
    let keys: Vec<_> = edges.keys().cloned().collect();
    assert_eq!(
        keys,
        vec![
            (vec![], "f".to_string(), "e".to_string()),
            (vec!["e".to_string()], "y".to_string(), "x".to_string()),
        ]
    );
    assert!(circles(&edges).is_empty());
}

/// Comments, strings and test modules name no imports.
#[test]
fn comments_strings_and_tests_are_not_imports() {
    let code = "// use crate::x::Y;\nlet s = \"crate::z::W\";\n#[cfg(test)]\nmod tests { use crate::q::R; }\nfn f() { crate::real::go(); }";
    let cleaned = without_tests(&strip_comments_and_strings(code));
    assert!(!cleaned.contains("crate::x"));
    assert!(!cleaned.contains("crate::z"));
    assert!(!cleaned.contains("crate::q"));
    assert!(cleaned.contains("crate::real::go"));
}

/// `unsafe` only in the engine's `sys` module: nowhere else is it written
/// or allowed (every crate denies `unsafe_code` through the workspace's
/// lints, and clippy's `undocumented_unsafe_blocks` wants each block's
/// SAFETY line).
#[test]
fn no_unsafe_outside_the_engines_sys_module() {
    let sys = workspace().join("crates/synapse-engine/src/sys");
    let mut dirs = crate_sources();
    dirs.extend(["tests", "benches"].map(|d| workspace().join(d)));
    let mut files = Vec::new();
    for dir in &dirs {
        walk(dir, &mut files);
    }
    let mut wrong: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(&sys))
        .filter(|f| {
            let code = strip_comments_and_strings(&std::fs::read_to_string(f).unwrap());
            find_word(&code, "unsafe").is_some() || code.contains("unsafe_code")
        })
        .map(|f| f.display().to_string())
        .collect();
    for src in crate_sources() {
        let dir = src.parent().unwrap();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        if !manifest.contains("[lints]\nworkspace = true") {
            wrong.push(format!(
                "{}: not under the workspace's lints",
                dir.display()
            ));
        }
    }
    assert!(files.len() > 100, "read {} files", files.len());
    assert!(
        wrong.is_empty(),
        "unsafe outside the engine's sys: {wrong:#?}"
    );
}

/// The engine and what it builds on (stats, units) name no terminal, HTTP,
/// async, command-line, plotting or metrics crate: the measurement never
/// pulls in a front end.
#[test]
fn the_engine_depends_on_no_front_end_crate() {
    const FRONT_END: &[&str] = &[
        "ratatui",
        "crossterm",
        "tokio",
        "hyper",
        "hyper-util",
        "http-body-util",
        "futures-util",
        "clap",
        "clap_complete",
        "clap_mangen",
        "plotters",
        "prometheus-client",
        "signal-hook",
        "tracing-subscriber",
        "toml_edit",
        "synapse",
    ];
    for name in ["synapse-engine", "synapse-stats", "synapse-units"] {
        let manifest =
            std::fs::read_to_string(workspace().join("crates").join(name).join("Cargo.toml"))
                .unwrap();
        let deps = dependencies(&manifest);
        assert!(deps.contains(&"serde".to_string()), "{name}: read {deps:?}");
        let front: Vec<_> = deps
            .iter()
            .filter(|d| FRONT_END.contains(&d.as_str()))
            .collect();
        assert!(front.is_empty(), "{name} depends on {front:?}");
    }
}

/// The crate names in a manifest's `[dependencies]` table.
fn dependencies(manifest: &str) -> Vec<String> {
    manifest
        .split("\n[")
        .filter(|table| table.starts_with("dependencies]"))
        .flat_map(|table| table.lines().skip(1))
        .filter_map(|line| line.split(['=', '.']).next())
        .map(str::trim)
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .map(str::to_string)
        .collect()
}
