//! Example outputs in README.md and `docs/*.md` against the program: a
//! fenced block right after a line
//!
//! ```text
//! <!-- example: synapse server --no-ui --bind 127.0.0.1:{port}
//!      until: Ready to echo
//!      then: synapse client 127.0.0.1:{port} --no-ui -->
//! ```
//!
//! is what the command prints on stdout, run in a scratch directory. A
//! server is stopped with SIGINT once a line holds the `until` text and the
//! `then` commands have run (and a second and a half more, so their
//! sessions end); `{port}` and `{port2}` are free ports on loopback, so an
//! example that shows a service's port binds none a user might be running.
//! `first:` commands run before the example's own, in the same directory,
//! and must succeed (the runs a `synapse compare` example compares).
//! Figures differ from run to run, so lines are compared with every number,
//! time unit, sign, bar and run of blanks masked, and the block's lines
//! must appear in the output in its order (an `…` line, or any line the
//! block leaves out, stands for lines not shown). A `json` block is
//! compared by its keys: each object holds the keys the program's does, no
//! fewer, and no more unless it says `…`. A ratio and a percentage are
//! both figures: `×2.7` and `+5.3 %` mask alike.
//!
//! `UPDATE_DOCS=1 cargo test --test docs examples` writes each block anew
//! from the run, keeping the lines it shows.

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// One marked example: where, what to run, and the block.
#[derive(Debug)]
struct Example {
    file: String,
    line: usize,
    run: Vec<String>,
    until: Option<String>,
    then: Vec<Vec<String>>,
    first: Vec<Vec<String>>,
    json: bool,
    /// The block's lines, and where in the file they start (a byte offset).
    body: String,
    body_at: usize,
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// The marked examples of one document: a marker opens a line (one quoted
/// in the text is not one).
fn examples(file: &str, text: &str) -> Vec<Example> {
    const MARK: &str = "\n<!-- example:";
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(start) = text[at..].find(MARK) {
        let start = at + start + 1;
        let place = format!("{file}:{}", text[..start].lines().count() + 1);
        let end = start + text[start..].find("-->").expect(&place);
        let mut lines = text[start + MARK.len() - 1..end].lines();
        let run = words(lines.next().unwrap_or_default());
        let (mut until, mut then, mut first) = (None, Vec::new(), Vec::new());
        for l in lines.map(str::trim) {
            if let Some(u) = l.strip_prefix("until:") {
                until = Some(u.trim().to_string());
            } else if let Some(t) = l.strip_prefix("then:") {
                then.push(words(t));
            } else if let Some(f) = l.strip_prefix("first:") {
                first.push(words(f));
            } else {
                panic!("{place}: {l:?} is neither `until:`, `then:` nor `first:`");
            }
        }
        // The fence must follow the marker at once.
        let fence = end + 3 + 1;
        assert!(
            text[fence..].starts_with("```"),
            "{place}: no block after the marker"
        );
        let body_at = fence + text[fence..].find('\n').unwrap() + 1;
        let body_end = body_at + text[body_at..].find("```").expect(&place);
        found.push(Example {
            file: file.to_string(),
            line: text[..start].lines().count() + 1,
            run,
            until,
            then,
            first,
            json: text[fence..body_at].trim() == "```json",
            body: text[body_at..body_end].to_string(),
            body_at,
        });
        at = body_end;
    }
    found
}

/// `args` as a command in `dir`: `synapse` is the binary under test,
/// anything else a program on the PATH.
fn command(dir: &Path, args: &[String]) -> Command {
    let mut cmd = if args[0] == "synapse" {
        Command::new(env!("CARGO_BIN_EXE_synapse"))
    } else {
        Command::new(&args[0])
    };
    cmd.args(&args[1..])
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir)
        .env("XDG_STATE_HOME", dir)
        .env("NO_COLOR", "1");
    cmd
}

/// What `ex` prints on stdout, run in `dir`.
fn run(dir: &Path, ex: &Example) -> String {
    let ports: Vec<String> = (0..2).map(|_| free_port().to_string()).collect();
    let fill = |args: &[String]| -> Vec<String> {
        args.iter()
            .map(|a| a.replace("{port}", &ports[0]).replace("{port2}", &ports[1]))
            .collect()
    };
    for f in &ex.first {
        let out = command(dir, &fill(f)).output().unwrap();
        assert!(
            out.status.success(),
            "{}:{}: `{}` failed: {}",
            ex.file,
            ex.line,
            f.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut cmd = command(dir, &fill(&ex.run));
    let Some(until) = ex.until.as_deref() else {
        let out = cmd.output().unwrap();
        return String::from_utf8_lossy(&out.stdout).into_owned();
    };
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        let _ = Command::new("kill").args([sig, &pid]).status();
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        stdout
            .lines()
            .map_while(Result::ok)
            .try_for_each(|l| tx.send(l))
    });
    // Bounded waits: a server that hangs fails the test instead of hanging it.
    let wait = Duration::from_secs(10);
    let mut text = String::new();
    while let Ok(line) = rx.recv_timeout(wait) {
        text += &(line.clone() + "\n");
        if line.contains(until) {
            for t in &ex.then {
                command(dir, &fill(t)).output().unwrap();
            }
            // Their sessions end after a second of silence; then SIGINT: a
            // server prints its totals and exits.
            std::thread::sleep(Duration::from_millis(1_500));
            signal("-INT");
        }
    }
    signal("-KILL");
    let _ = child.wait();
    text
}

/// A UDP and TCP port free on loopback, about now.
fn free_port() -> u16 {
    loop {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A line with what changes from run to run masked.
fn normal(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut after_letter = false;
    while let Some(c) = chars.next() {
        // A name's digits stay: P50, P99.9, T1, L7, IPv4.
        if c.is_ascii_digit() && after_letter {
            out.push(c);
            while let Some(n) = chars.next_if(|n| n.is_ascii_digit() || *n == '.') {
                out.push(n);
            }
            after_letter = false;
            continue;
        }
        after_letter = c.is_alphabetic();
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_digit() || ".,:".contains(*n))
            {
                chars.next();
            }
            // A sign before the number goes with it.
            while out.ends_with(['+', '−', '-']) {
                out.pop();
            }
            out.push('#');
        } else if "█▉▊▋▌▍▎▏▁▂▃▄▅▆▇".contains(c) {
            continue;
        } else {
            out.push(c);
        }
    }
    let mut text: Vec<String> = out.split_whitespace().map(str::to_string).collect();
    for i in 0..text.len() {
        let w = text[i].clone();
        // Units and plurals after a number: `# µs`, `#.#k`, `# packets`.
        if i > 0 && text[i - 1].ends_with('#') {
            let unit = w.trim_end_matches([',', ';', ')', '.']);
            let rest = &w[unit.len()..];
            let glued = ["ns", "µs", "us", "ms", "s"].into_iter().find(|u| {
                w.strip_prefix(u)
                    .is_some_and(|r| r.starts_with(['–', '-', ']']))
            });
            if ["ns", "µs", "us", "ms", "s", "k", "M", "G"].contains(&unit) {
                text[i] = format!("t{rest}");
            } else if let Some(u) = glued {
                // A range's first end: `[# µs–# µs]`.
                text[i] = format!("t{}", &w[u.len()..]);
            } else if let Some(one) = unit.strip_suffix("ies") {
                text[i] = format!("{one}y{rest}");
            } else if let Some(one) = unit.strip_suffix('s') {
                text[i] = format!("{one}{rest}");
            }
        }
        for (from, to) in [("#s", "#t"), ("#k", "#"), ("#M", "#")] {
            if text[i].starts_with(from) {
                text[i] = text[i].replacen(from, to, 1);
            }
        }
    }
    text.join(" ")
        .replace('✗', "✓")
        .replace("×#", "#")
        .replace("# %", "#")
}

/// Each of `shown` in `printed`, in order; the index in `printed` of each,
/// or the first line that is not there.
fn find_in_order(shown: &[&str], printed: &[&str]) -> Result<Vec<usize>, String> {
    let mut from = 0;
    let mut found = Vec::new();
    for want in shown {
        if want.trim() == "…" || want.trim().is_empty() {
            found.push(usize::MAX);
            continue;
        }
        let w = normal(want);
        match (from..printed.len()).find(|&i| normal(printed[i]) == w) {
            Some(i) => {
                found.push(i);
                from = i + 1;
            }
            None => return Err(format!("{want:?} (as {w:?})")),
        }
    }
    Ok(found)
}

/// A json block with `…` made parseable: a key `"…"` in an object that
/// leaves keys out, an item `"…"` in a list.
fn json_of_doc(body: &str) -> serde_json::Value {
    let mut out = String::new();
    let mut stack = Vec::new();
    let mut in_string = false;
    for c in body.chars() {
        match c {
            '"' => in_string = !in_string,
            '{' | '[' if !in_string => stack.push(c),
            '}' | ']' if !in_string => {
                stack.pop();
            }
            '…' if !in_string => {
                out.push_str(if stack.last() == Some(&'{') {
                    "\"…\": null"
                } else {
                    "\"…\""
                });
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The doc's JSON against the program's: the same keys (fewer where the
/// doc says `…`), the same kinds of value.
fn same_shape(doc: &serde_json::Value, real: &serde_json::Value, at: &str) -> Result<(), String> {
    use serde_json::Value::*;
    match (doc, real) {
        (Object(d), Object(r)) => {
            for (k, v) in d.iter().filter(|(k, _)| *k != "…") {
                let r = r
                    .get(k)
                    .ok_or(format!("{at}.{k}: not in the program's output"))?;
                same_shape(v, r, &format!("{at}.{k}"))?;
            }
            if !d.contains_key("…")
                && let Some(k) = r.keys().find(|k| !d.contains_key(*k))
            {
                return Err(format!("{at}.{k}: printed, but not in the doc (nor `…`)"));
            }
            Ok(())
        }
        (Array(d), Array(r)) => match (d.first(), r.first()) {
            (Some(d), Some(r)) if d != "…" => same_shape(d, r, &format!("{at}[0]")),
            _ => Ok(()),
        },
        (Number(_), Number(_)) | (String(_), String(_)) | (Bool(_), Bool(_)) | (Null, Null) => {
            Ok(())
        }
        _ => Err(format!("{at}: the doc has {doc}, the program {real}")),
    }
}

/// The documents that may hold examples.
fn documents() -> Vec<std::path::PathBuf> {
    let root = super::root();
    let mut docs = vec![root.join("README.md")];
    let mut more: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    docs
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

#[test]
fn example_outputs_in_the_docs_are_what_the_program_prints() {
    let update = std::env::var_os("UPDATE_DOCS").is_some();
    let mut wrong = Vec::new();
    let mut count = 0;
    for path in documents() {
        let mut text = std::fs::read_to_string(&path).unwrap();
        let name = path
            .strip_prefix(super::root())
            .unwrap()
            .display()
            .to_string();
        let found = examples(&name, &text);
        count += found.len();
        // Rewritten from the last block back, so earlier offsets hold.
        for ex in found.iter().rev() {
            let needs_root = ex.run.iter().any(|w| w == "--user");
            if needs_root && !is_root() {
                crate::announce::skip(
                    &format!("{}:{}", ex.file, ex.line),
                    "--user needs root (CI runs as root)",
                );
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let printed = run(dir.path(), ex);
            let place = format!("{}:{} ({})", ex.file, ex.line, ex.run.join(" "));
            if ex.json {
                let real: serde_json::Value = serde_json::from_str(&printed)
                    .unwrap_or_else(|e| panic!("{place}: not JSON: {e}"));
                if let Err(e) = same_shape(&json_of_doc(&ex.body), &real, "") {
                    wrong.push(format!("{place}: {e}"));
                }
                continue;
            }
            let shown: Vec<&str> = ex.body.lines().collect();
            let lines: Vec<&str> = printed.lines().collect();
            match find_in_order(&shown, &lines) {
                Ok(at) if update => {
                    let fresh: Vec<&str> = shown
                        .iter()
                        .zip(&at)
                        .map(|(s, i)| if *i == usize::MAX { *s } else { lines[*i] })
                        .collect();
                    let end = ex.body_at + ex.body.len();
                    text.replace_range(ex.body_at..end, &(fresh.join("\n") + "\n"));
                }
                Ok(_) => {}
                Err(line) => wrong.push(format!(
                    "{place}: {line} is not in what it printed:\n{printed}"
                )),
            }
        }
        if update {
            std::fs::write(&path, text).unwrap();
        }
    }
    assert!(count >= 8, "only {count} marked examples found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn masking_keeps_the_words_and_drops_the_figures() {
    assert_eq!(
        normal("  P50:        36.4 µs  ← 50% of packets"),
        normal("  P50:       1.02 ms  ← 50% of packets")
    );
    assert_eq!(
        normal("Packets:  10,000 sent, 0 lost"),
        "Packets: # sent, # lost"
    );
    assert_eq!(normal("(        1 packet)"), normal("(  709 packets)"));
    assert_eq!(
        normal("  network + remote  −3.2 µs"),
        normal("network + remote +101 ns")
    );
    assert_ne!(normal("P50: 3 µs"), normal("P99: 3 µs"));
    assert_eq!(
        normal("  p99  +2.4 µs (+5.3 %)   −30 % to +58 %   +50 %"),
        normal("  p99  −218.7 µs (×0.42)  ×0.13 to ×2.6    ×4.5")
    );
    assert_eq!(
        normal("  P99:       272.9 µs  [231.5 µs–301.2 µs]   ← 99%"),
        normal("  P99:        3.90 ms  [3.84 ms–3.95 ms]     ← 99%")
    );
    let doc = json_of_doc(r#"{"a": {"b": 1, …}, "c": [1, …]}"#);
    let real = serde_json::json!({"a": {"b": 2, "x": 3}, "c": [4]});
    assert!(same_shape(&doc, &real, "").is_ok());
    let strict = json_of_doc(r#"{"a": {"b": 1}}"#);
    assert!(same_shape(&strict, &real, "").unwrap_err().contains(".a.x"));
}
