//! A command-line mistake as one line: clap's message, its "did you mean"
//! when it has one, and the help of the (sub)command that was typed.

/// clap's error on one line: `unrecognized subcommand 'clinet' (did you
/// mean 'client'? see synapse --help)`. A mistake inside a subcommand
/// points at that subcommand's help; `args` is the command line as typed
/// (the program's name first).
pub fn one_line(e: &clap::Error, cmd: &clap::Command, args: &[String]) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let rest: Vec<&str> = lines.collect();
    // "the following required arguments were not provided:" lists them
    // indented on the lines under it.
    let message = if first.ends_with(':') {
        let listed: Vec<&str> = rest
            .iter()
            .take_while(|l| !l.trim().is_empty())
            .map(|l| l.trim())
            .collect();
        format!("{first} {}", listed.join(", "))
    } else {
        first.to_string()
    };
    let similar: Vec<String> = rest
        .iter()
        .filter_map(|l| l.trim().strip_prefix("tip: "))
        .filter(|tip| tip.contains("similar"))
        .filter_map(|tip| tip.split_once(": ").map(|(_, names)| names))
        // clap lists them `'a', 'b'`: said `'a' or 'b'`.
        .map(|names| match names.rsplit_once(", ") {
            Some((head, last)) => format!("{head} or {last}"),
            None => names.to_string(),
        })
        .collect();
    let see = format!("see {} --help", command_path(cmd, args));
    if similar.is_empty() {
        format!("{message} ({see})")
    } else {
        format!("{message} (did you mean {}? {see})", similar.join(", "))
    }
}

/// The (sub)command typed: `synapse profiles show`. Each word of `args`
/// that names a subcommand of the one before it goes down a level; the
/// words after `--` are inputs.
fn command_path(cmd: &clap::Command, args: &[String]) -> String {
    let mut path = vec![cmd.get_name().to_string()];
    let mut at = cmd;
    for word in args.iter().skip(1).take_while(|w| *w != "--") {
        if let Some(sub) = at.find_subcommand(word) {
            path.push(sub.get_name().to_string());
            at = sub;
        }
    }
    path.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(args: &[&str]) -> String {
        let mut argv = vec!["synapse".to_string()];
        argv.extend(args.iter().map(ToString::to_string));
        let cmd = crate::cli::command();
        match cmd.clone().try_get_matches_from(&argv) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => one_line(&e, &cmd, &argv),
        }
    }

    #[test]
    fn a_misspelt_subcommand_or_option_gets_a_suggestion() {
        assert_eq!(
            error_of(&["clinet"]),
            "unrecognized subcommand 'clinet' (did you mean 'calibrate' or 'client'? see synapse --help)"
        );
        assert_eq!(
            error_of(&["serve"]),
            "unrecognized subcommand 'serve' (did you mean 'server'? see synapse --help)"
        );
        assert_eq!(
            error_of(&["--stmp"]),
            "unexpected argument '--stmp' found (did you mean '--stamp'? see synapse --help)"
        );
    }

    #[test]
    fn a_mistake_in_a_subcommand_points_at_its_help() {
        assert_eq!(
            error_of(&["client", "--stmp"]),
            "unexpected argument '--stmp' found (did you mean '--stamp'? see synapse client --help)"
        );
        let e = error_of(&["profiles", "show"]);
        assert!(e.ends_with("(see synapse profiles show --help)"), "{e}");
        assert!(e.contains("<NAME>"), "the missing argument is named: {e}");
        let e = error_of(&["client", "--interval", "1x"]);
        assert!(
            e.starts_with("invalid value '1x' for '--interval <DURATION>'"),
            "{e}"
        );
        assert!(e.ends_with("(see synapse client --help)"), "{e}");
    }
}
