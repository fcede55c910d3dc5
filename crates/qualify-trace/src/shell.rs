//! Recorded command lines parsed as a shell parses them (`brush-parser`, a maintained bash
//! parser): a line becomes the simple commands it runs, in order, each with its words (quotes
//! removed, literal variables substituted), the environment it was given, and what the line's
//! exit status says about it ([`Status`]).
//!
//! Heredoc bodies, here-strings, quoted strings and comments are data, never commands; the text
//! a command writes to a file (`cat > run.sh <<EOF`, `echo … > x`, `tee x <<<…`) is remembered
//! as a file the session wrote. Followed: `&&`, `||`, `;`, pipelines, subshells and groups,
//! `if`/`case`/`while` bodies, `for` loops over literal lists (one run per value, the variable
//! substituted), functions defined and then called, `bash -c '…'`, a shell reading a heredoc
//! (`bash <<EOF`), and a script the session wrote run as `sh run.sh`, `bash -x run.sh`,
//! `./run.sh`, `source run.sh` (its `$1`… bound), at most [`MAX_DEPTH`] deep. Wrappers that only
//! change how a program runs (`time`, `timeout 60`, `env A=1`, `nice -n 5`, `sudo`, `nohup`,
//! `exec`, `command`, `stdbuf -oL`) are looked through; `export NAME=value` applies to the
//! simple commands after it. A line the parser refuses (an unterminated quote, a syntax error) is
//! one a shell would refuse too: it runs nothing ([`Parsed::unparsed`]).

use std::collections::BTreeMap;

use brush_parser::ast;
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{ParserOptions, SourceInfo, parse_tokens, uncached_tokenize_str};

/// How deep scripts, `bash -c` strings and function calls are followed.
pub const MAX_DEPTH: usize = 4;
/// How many values of one `for` loop are expanded (more runs the body once, unexpanded).
pub const MAX_LOOP_VALUES: usize = 64;

/// What the command line's exit status says about one of its simple commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// It is the command whose status is the line's (the last one to run).
    Decides,
    /// Only a line that succeeded says it succeeded (it comes before the end of an `&&` chain).
    ImpliedByPass,
    /// The line's status says nothing about it (a pipeline's earlier stage, before `;`, `||`,
    /// an `if` condition, a loop's earlier iteration).
    Unknown,
}

impl Status {
    /// This command's result from the line's: `Some(true)` failed, `Some(false)` passed.
    pub fn result(self, line_failed: Option<bool>) -> Option<bool> {
        match (self, line_failed) {
            (Status::Decides, f) => f,
            (Status::ImpliedByPass, Some(false)) => Some(false),
            _ => None,
        }
    }
}

/// One simple command: the program and its arguments, the environment it was given on the
/// same line (its own assignments and earlier `export`s), and how its result is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simple {
    pub env: Vec<(String, String)>,
    pub words: Vec<String>,
    pub status: Status,
    /// The simple commands that had to succeed for this one to run (`cd x && ./t`: the `cd`).
    pub after: Vec<usize>,
    /// The script or `bash -c` string it came from, when not the line itself.
    pub via: Option<String>,
    /// It sits in a branch the trace cannot tell was taken (`if`/`case` bodies, `while`
    /// bodies, the right of `||`): it may not have run.
    pub conditional: bool,
    /// Files its redirections name (`> out.txt`, `< in`): a shell error naming one is about it.
    pub redirects: Vec<String>,
}

impl Simple {
    /// The program's file name (`./build/transfer` → `transfer`).
    pub fn program(&self) -> Option<&str> {
        self.words.first().map(|w| basename(w))
    }
}

/// A file the session wrote through the shell (or its editor tools): its path as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub path: String,
    pub content: String,
    /// The simple command of the line that wrote it (its index in [`Parsed::commands`]).
    pub by: Option<usize>,
}

/// A command line, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub commands: Vec<Simple>,
    /// Files the line wrote (`cat > x <<EOF`), in order.
    pub writes: Vec<Written>,
    /// The shell parser refused the line (or a script or `bash -c` string it ran).
    pub unparsed: bool,
}

/// The last path component of `word`.
pub fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `NAME=value` when `word` is an assignment.
pub fn assignment(word: &str) -> Option<(String, String)> {
    let (name, value) = word.split_once('=')?;
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    ok.then(|| (name.to_string(), value.to_string()))
}

fn is_shell(program: &str) -> bool {
    matches!(program, "sh" | "bash" | "zsh" | "dash" | "ksh")
}

/// Split a command line into its simple commands (no files written before it are known).
pub fn simple_commands(line: &str) -> Vec<Simple> {
    Shell::default().parse(line).commands
}

/// The shell state of one session: the files it wrote, so a script it wrote and then ran is
/// followed.
#[derive(Debug, Clone, Default)]
pub struct Shell {
    files: Vec<Written>,
}

impl Shell {
    /// Remember a file the session wrote (a `Write` tool's content, an added file of a patch).
    pub fn wrote(&mut self, path: &str, content: &str) {
        self.files.retain(|f| f.path != path);
        self.files.push(Written {
            path: path.to_string(),
            content: content.to_string(),
            by: None,
        });
    }

    /// The content of a file the session wrote, found by the path a command names it by
    /// (`./run.sh`, `run.sh`, `/w/run.sh` are the same file when one path ends the other).
    pub fn file(&self, path: &str) -> Option<&str> {
        let want = path.trim_start_matches("./");
        if want.is_empty() {
            return None;
        }
        self.files
            .iter()
            .rev()
            .find(|f| {
                let have = f.path.trim_start_matches("./");
                have == want
                    || have.ends_with(&format!("/{want}"))
                    || want.ends_with(&format!("/{have}"))
            })
            .map(|f| f.content.as_str())
    }

    /// Parse `line`; the files it writes are remembered for the lines after it.
    pub fn parse(&mut self, line: &str) -> Parsed {
        let mut w = Walker {
            shell: self,
            out: Parsed::default(),
            exported: Vec::new(),
            vars: BTreeMap::new(),
            functions: BTreeMap::new(),
            depth: 0,
            via: None,
            conditional: false,
        };
        w.script(line, Status::Decides, &[]);
        w.out
    }
}

fn parse_program(text: &str) -> Option<ast::Program> {
    let parse = |text: &str| {
        let options = ParserOptions::default();
        let tokens = uncached_tokenize_str(text, &options.tokenizer_options()).ok()?;
        parse_tokens(
            &tokens,
            &options,
            &SourceInfo {
                source: "command".into(),
            },
        )
        .ok()
    };
    // brush-parser 0.2 refuses a heredoc inside a command substitution (`git commit -m
    // "$(cat <<'EOF' … EOF\n)"`, how agents write commit messages); the body is data, so the
    // line is parsed again without the heredocs' bodies.
    parse(text).or_else(|| without_heredoc_bodies(text).and_then(|t| parse(&t)))
}

/// `text` with every heredoc's operator and body removed (`cat <<'EOF'\nbody\nEOF\n` →
/// `cat \n`), or `None` when it has none or one has no end line.
fn without_heredoc_bodies(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split_inclusive('\n');
    let mut found = false;
    while let Some(line) = lines.next() {
        // The heredocs this line opens, in order: their delimiters and whether `<<-`.
        let mut pending: Vec<(String, bool)> = Vec::new();
        let mut kept = String::new();
        let mut rest = line;
        while let Some(i) = rest.find("<<") {
            let after = &rest[i + 2..];
            if let Some(after) = after.strip_prefix('<') {
                // A here-string `<<<`: data on the line itself.
                kept.push_str(&rest[..i + 3]);
                rest = after;
                continue;
            }
            let (dash, after) = match after.strip_prefix('-') {
                Some(a) => (true, a),
                None => (false, after),
            };
            let trimmed = after.trim_start();
            let quote = trimmed.chars().next().filter(|c| *c == '\'' || *c == '"');
            let word = trimmed.trim_start_matches(['\'', '"']);
            let end = word
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(word.len());
            if end == 0 {
                kept.push_str(&rest[..i + 2]);
                rest = after;
                continue;
            }
            let delimiter = word[..end].to_string();
            let mut tail = &word[end..];
            if let Some(q) = quote {
                tail = tail.strip_prefix(q).unwrap_or(tail);
            }
            kept.push_str(&rest[..i]);
            pending.push((delimiter, dash));
            rest = tail;
        }
        kept.push_str(rest);
        out.push_str(&kept);
        for (delimiter, dash) in pending {
            found = true;
            loop {
                let body = lines.next()?;
                let l = body.trim_end_matches(['\n', '\r']);
                let l = if dash { l.trim_start_matches('\t') } else { l };
                if l == delimiter {
                    break;
                }
            }
        }
    }
    found.then_some(out)
}

struct Walker<'a> {
    shell: &'a mut Shell,
    out: Parsed,
    exported: Vec<(String, String)>,
    /// Shell variables with literal values (assignments, loop variables, `$1`…).
    vars: BTreeMap<String, String>,
    functions: BTreeMap<String, ast::FunctionBody>,
    depth: usize,
    via: Option<String>,
    /// Inside a branch that may not have been taken.
    conditional: bool,
}

impl Walker<'_> {
    /// Walk `f` as a branch that may not have been taken.
    fn branch(&mut self, f: impl FnOnce(&mut Self)) {
        let saved = std::mem::replace(&mut self.conditional, true);
        f(self);
        self.conditional = saved;
    }

    /// Walk a whole script (a line, a `bash -c` string, a script file's content).
    fn script(&mut self, text: &str, status: Status, after: &[usize]) {
        let Some(program) = parse_program(text) else {
            self.out.unparsed = true;
            return;
        };
        let n = program.complete_commands.len();
        for (i, list) in program.complete_commands.iter().enumerate() {
            let s = if i + 1 == n { status } else { Status::Unknown };
            self.compound_list(list, s, after);
        }
    }

    fn compound_list(&mut self, list: &ast::CompoundList, status: Status, after: &[usize]) {
        let n = list.0.len();
        for (i, ast::CompoundListItem(and_or, sep)) in list.0.iter().enumerate() {
            let last = i + 1 == n && !matches!(sep, ast::SeparatorOperator::Async);
            self.and_or(and_or, if last { status } else { Status::Unknown }, after);
        }
    }

    fn and_or(&mut self, list: &ast::AndOrList, status: Status, after: &[usize]) {
        let mut parts: Vec<(bool, &ast::Pipeline)> = vec![(true, &list.first)];
        for a in &list.additional {
            match a {
                ast::AndOr::And(p) => parts.push((true, p)),
                ast::AndOr::Or(p) => parts.push((false, p)),
            }
        }
        let n = parts.len();
        let mut needs: Vec<usize> = after.to_vec();
        for i in 0..n {
            // A part whose later connectors are all `&&` is implied by the line passing.
            let chained = parts[i + 1..].iter().all(|(and, _)| *and);
            let s = if i + 1 == n {
                status
            } else if chained && status != Status::Unknown {
                Status::ImpliedByPass
            } else {
                Status::Unknown
            };
            let start = self.out.commands.len();
            // After a `||`, a part runs only when the one before it failed.
            if i > 0 && !parts[i].0 {
                self.branch(|w| w.pipeline(parts[i].1, s, &needs));
            } else {
                self.pipeline(parts[i].1, s, &needs);
            }
            let emitted: Vec<usize> = (start..self.out.commands.len()).collect();
            match parts.get(i + 1) {
                Some((true, _)) => needs.extend(emitted),
                Some((false, _)) => needs = after.to_vec(),
                None => {}
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline, status: Status, after: &[usize]) {
        let n = p.seq.len();
        for (i, c) in p.seq.iter().enumerate() {
            let s = if i + 1 == n && !p.bang {
                status
            } else {
                Status::Unknown
            };
            self.command(c, s, after);
        }
    }

    fn command(&mut self, c: &ast::Command, status: Status, after: &[usize]) {
        match c {
            ast::Command::Simple(s) => self.simple(s, status, after),
            ast::Command::Compound(cc, redirects) => {
                if let Some(r) = redirects {
                    for io in &r.0 {
                        self.redirect_commands(io, after);
                    }
                }
                self.compound(cc, status, after);
            }
            ast::Command::Function(f) => {
                self.functions.insert(f.fname.clone(), f.body.clone());
            }
            ast::Command::ExtendedTest(_) => {}
        }
    }

    fn compound(&mut self, cc: &ast::CompoundCommand, status: Status, after: &[usize]) {
        use ast::CompoundCommand as C;
        match cc {
            C::Arithmetic(_) => {}
            C::BraceGroup(ast::BraceGroupCommand(list))
            | C::Subshell(ast::SubshellCommand(list)) => self.compound_list(list, status, after),
            C::ArithmeticForClause(f) => {
                self.branch(|w| w.compound_list(&f.body.0, Status::Unknown, after))
            }
            C::ForClause(f) => {
                let values: Option<Vec<String>> = f.values.as_ref().map(|ws| {
                    ws.iter()
                        .flat_map(|w| {
                            self.word(&w.value)
                                .split_whitespace()
                                .map(String::from)
                                .collect::<Vec<_>>()
                        })
                        .collect()
                });
                let literal = values.as_ref().filter(|v| {
                    !v.is_empty()
                        && v.len() <= MAX_LOOP_VALUES
                        && v.iter().all(|x| !x.contains(['$', '`', '*', '?', '[']))
                });
                match literal {
                    Some(values) => {
                        let n = values.len();
                        let saved = self.vars.get(&f.variable_name).cloned();
                        for (i, v) in values.clone().into_iter().enumerate() {
                            self.vars.insert(f.variable_name.clone(), v);
                            let s = if i + 1 == n { status } else { Status::Unknown };
                            self.compound_list(&f.body.0, s, after);
                        }
                        match saved {
                            Some(v) => self.vars.insert(f.variable_name.clone(), v),
                            None => self.vars.remove(&f.variable_name),
                        };
                    }
                    None => {
                        let saved = self.vars.remove(&f.variable_name);
                        self.compound_list(&f.body.0, Status::Unknown, after);
                        if let Some(v) = saved {
                            self.vars.insert(f.variable_name.clone(), v);
                        }
                    }
                }
            }
            C::CaseClause(c) => self.branch(|w| {
                for item in &c.cases {
                    if let Some(list) = &item.cmd {
                        w.compound_list(list, Status::Unknown, after);
                    }
                }
            }),
            C::IfClause(i) => {
                self.compound_list(&i.condition, Status::Unknown, after);
                self.branch(|w| {
                    w.compound_list(&i.then, Status::Unknown, after);
                    for e in i.elses.iter().flatten() {
                        if let Some(c) = &e.condition {
                            w.compound_list(c, Status::Unknown, after);
                        }
                        w.compound_list(&e.body, Status::Unknown, after);
                    }
                });
            }
            C::WhileClause(ast::WhileOrUntilClauseCommand(cond, body))
            | C::UntilClause(ast::WhileOrUntilClauseCommand(cond, body)) => {
                self.compound_list(cond, Status::Unknown, after);
                self.branch(|w| w.compound_list(&body.0, Status::Unknown, after));
            }
        }
    }

    /// Commands inside a redirection (`> >(tee log)`, `< <(make)`).
    fn redirect_commands(&mut self, io: &ast::IoRedirect, after: &[usize]) {
        if let ast::IoRedirect::File(_, _, ast::IoFileRedirectTarget::ProcessSubstitution(_, sub)) =
            io
        {
            self.compound_list(&sub.0, Status::Unknown, after);
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, status: Status, after: &[usize]) {
        let mut env: Vec<(String, String)> = Vec::new();
        let mut words: Vec<String> = Vec::new();
        let mut stdin_body: Option<String> = None;
        let mut targets: Vec<String> = Vec::new();
        let mut redirects: Vec<String> = Vec::new();
        let mut items: Vec<&ast::CommandPrefixOrSuffixItem> = Vec::new();
        if let Some(p) = &s.prefix {
            items.extend(p.0.iter());
        }
        let name_at = items.len();
        if let Some(p) = &s.suffix {
            items.extend(p.0.iter());
        }
        let mut seen_name = false;
        for (i, item) in items.iter().enumerate() {
            if i == name_at && !seen_name {
                seen_name = true;
                if let Some(w) = &s.word_or_name {
                    self.push_word(&mut words, &w.value);
                }
            }
            match item {
                ast::CommandPrefixOrSuffixItem::Word(w) => self.push_word(&mut words, &w.value),
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    if i < name_at {
                        if let (
                            ast::AssignmentName::VariableName(n),
                            ast::AssignmentValue::Scalar(v),
                        ) = (&a.name, &a.value)
                        {
                            env.push((n.clone(), self.word(&v.value)));
                        }
                    } else {
                        words.push(self.word(&w.value));
                    }
                }
                ast::CommandPrefixOrSuffixItem::IoRedirect(io) => match io {
                    ast::IoRedirect::HereDocument(fd, doc) if fd.is_none_or(|f| f == 0) => {
                        stdin_body = Some(if doc.requires_expansion {
                            self.substitute(&doc.doc.value)
                        } else {
                            doc.doc.value.clone()
                        });
                    }
                    ast::IoRedirect::HereString(fd, w) if fd.is_none_or(|f| f == 0) => {
                        stdin_body = Some(self.word(&w.value) + "\n");
                    }
                    ast::IoRedirect::File(
                        fd,
                        ast::IoFileRedirectKind::Write
                        | ast::IoFileRedirectKind::Append
                        | ast::IoFileRedirectKind::Clobber,
                        ast::IoFileRedirectTarget::Filename(t),
                    ) if fd.is_none_or(|f| f == 1) => targets.push(self.word(&t.value)),
                    ast::IoRedirect::OutputAndError(t, _) => targets.push(self.word(&t.value)),
                    ast::IoRedirect::File(_, _, ast::IoFileRedirectTarget::Filename(t)) => {
                        redirects.push(self.word(&t.value))
                    }
                    other => self.redirect_commands(other, after),
                },
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    self.compound_list(&sub.0, Status::Unknown, after);
                }
            }
        }
        if !seen_name && let Some(w) = &s.word_or_name {
            self.push_word(&mut words, &w.value);
        }
        if words.is_empty() {
            // Only assignments: shell variables for the rest of the line.
            for (n, v) in env {
                self.vars.insert(n, v);
            }
            return;
        }
        self.writes(&words, stdin_body.as_deref(), &targets);
        let mut all_env = self.exported.clone();
        all_env.extend(env);
        let Some(simple) = unwrap_wrappers(words, all_env, &mut self.exported, &mut self.vars)
        else {
            return;
        };
        let index = self.out.commands.len();
        let program = simple.program().unwrap_or("").to_string();
        let first = simple.words.first().cloned().unwrap_or_default();
        let args: Vec<String> = simple.words[1..].to_vec();
        redirects.extend(targets.iter().cloned());
        self.out.commands.push(Simple {
            status,
            after: after.to_vec(),
            via: self.via.clone(),
            conditional: self.conditional,
            redirects,
            ..simple
        });
        if self.depth >= MAX_DEPTH {
            return;
        }
        let mut inner_after = after.to_vec();
        inner_after.push(index);
        // What the command itself runs: a `-c` string, a heredoc read by a shell, a script the
        // session wrote, a function defined earlier.
        if let Some(body) = self.functions.get(&first).cloned() {
            let positional = args.clone();
            self.nested(&format!("function {first}"), &positional, |w| {
                w.compound(&body.0, status, &inner_after)
            });
            return;
        }
        let shell = is_shell(&program);
        if shell {
            let mut i = 0;
            while let Some(a) = args.get(i) {
                if a == "-c" || (a.starts_with('-') && !a.starts_with("--") && a.ends_with('c')) {
                    if let Some(script) = args.get(i + 1) {
                        let positional: Vec<String> = args[i + 2..].to_vec();
                        let script = script.clone();
                        self.nested(&format!("{program} -c"), &positional, |w| {
                            w.script(&script, status, &inner_after)
                        });
                    }
                    return;
                }
                if a.starts_with('-') || a.starts_with('+') {
                    i += 1;
                    continue;
                }
                break;
            }
            match args.get(i) {
                Some(path) => {
                    if let Some(content) = self.shell.file(path).map(str::to_string) {
                        let positional = args[i + 1..].to_vec();
                        self.nested(path, &positional, |w| {
                            w.script(&content, status, &inner_after)
                        });
                    }
                }
                None => {
                    if let Some(body) = stdin_body {
                        self.nested(&format!("{program} <<"), &[], |w| {
                            w.script(&body, status, &inner_after)
                        });
                    }
                }
            }
            return;
        }
        let sourced = matches!(first.as_str(), "source" | ".");
        let script = if sourced {
            args.first().cloned()
        } else {
            Some(first.clone())
        };
        if let Some(path) = script
            && (sourced || path.contains('/'))
            && let Some(content) = self.shell.file(&path).map(str::to_string)
        {
            let positional = if sourced { args[1..].to_vec() } else { args };
            self.nested(&path, &positional, |w| {
                w.script(&content, status, &inner_after)
            });
        }
    }

    /// A word of a command: `"$@"` and `$*` become the positional parameters, one word each;
    /// any other word one word.
    fn push_word(&self, words: &mut Vec<String>, raw: &str) {
        if matches!(raw, "\"$@\"" | "$@" | "\"${@}\"" | "${@}" | "$*" | "\"$*\"")
            && self.vars.contains_key("#")
        {
            let n: usize = self.vars.get("#").and_then(|n| n.parse().ok()).unwrap_or(0);
            for i in 1..=n {
                if let Some(v) = self.vars.get(&i.to_string()) {
                    words.push(v.clone());
                }
            }
            return;
        }
        words.push(self.word(raw));
    }

    /// Walk something the command runs, one level deeper, with `$1`… bound to `positional`.
    fn nested(&mut self, via: &str, positional: &[String], f: impl FnOnce(&mut Self)) {
        let saved_vars = self.vars.clone();
        let saved_via = self.via.replace(via.to_string());
        for (i, p) in positional.iter().enumerate() {
            self.vars.insert((i + 1).to_string(), p.clone());
        }
        self.vars
            .insert("#".to_string(), positional.len().to_string());
        self.depth += 1;
        f(self);
        self.depth -= 1;
        self.via = saved_via;
        self.vars = saved_vars;
    }

    /// Remember what a command wrote to a file: `cat`/`tee` of a heredoc or here-string, an
    /// `echo`/`printf` redirected.
    fn writes(&mut self, words: &[String], stdin: Option<&str>, targets: &[String]) {
        let program = words.first().map(|w| basename(w)).unwrap_or("");
        let content = match (program, stdin) {
            ("cat", Some(body)) => Some(body.to_string()),
            ("tee", Some(body)) => {
                for t in words[1..].iter().filter(|w| !w.starts_with('-')) {
                    self.write(t, body);
                }
                None
            }
            ("echo", _) => Some(
                words[1..]
                    .iter()
                    .skip_while(|w| w.starts_with('-'))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
                    + "\n",
            ),
            ("printf", _) => words.get(1).map(|f| f.replace("\\n", "\n")),
            _ => None,
        };
        if let Some(content) = content {
            for t in targets {
                self.write(t, &content);
            }
        }
    }

    fn write(&mut self, path: &str, content: &str) {
        if path.is_empty() || path.starts_with("/dev/") || path.contains('$') {
            return;
        }
        self.out.writes.push(Written {
            path: path.to_string(),
            content: content.to_string(),
            // The writer is the simple command pushed next.
            by: Some(self.out.commands.len()),
        });
        self.shell.wrote(path, content);
    }

    /// `$NAME` and `${NAME}` in a heredoc body replaced by the literal values known.
    fn substitute(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            let (name, len) = if let Some(b) = after.strip_prefix('{') {
                match b.find('}') {
                    Some(e) => (&b[..e], e + 2),
                    None => ("", 0),
                }
            } else {
                let e = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..e], e)
            };
            match self.vars.get(name) {
                Some(v) if !name.is_empty() => {
                    out.push_str(v);
                    rest = &after[len..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// A word with its quotes removed and its literal variables substituted; anything else a
    /// shell would expand (`$(…)`, `$((…))`, an unknown `$N`) is kept as written.
    fn word(&self, raw: &str) -> String {
        match word::parse(raw, &ParserOptions::default()) {
            Ok(pieces) => {
                let mut s = String::new();
                self.pieces(raw, &pieces, &mut s);
                s
            }
            Err(_) => brush_parser::unquote_str(raw),
        }
    }

    fn pieces(&self, raw: &str, pieces: &[WordPieceWithSource], out: &mut String) {
        for p in pieces {
            let source = raw.get(p.start_index..p.end_index).unwrap_or("");
            match &p.piece {
                WordPiece::Text(t) => out.push_str(t),
                WordPiece::SingleQuotedText(t) => out.push_str(t),
                WordPiece::AnsiCQuotedText(t) => out.push_str(&ansi_c(t)),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    // Inner pieces' indices are relative to the same raw word.
                    self.pieces(raw, inner, out)
                }
                WordPiece::TildePrefix(t) => {
                    out.push('~');
                    out.push_str(t);
                }
                WordPiece::EscapeSequence(e) => out.push_str(e.strip_prefix('\\').unwrap_or(e)),
                WordPiece::ParameterExpansion(_) => {
                    let name = source
                        .trim_start_matches('$')
                        .trim_start_matches('{')
                        .trim_end_matches('}');
                    match self.vars.get(name) {
                        Some(v) => out.push_str(v),
                        None => out.push_str(source),
                    }
                }
                WordPiece::CommandSubstitution(_)
                | WordPiece::BackquotedCommandSubstitution(_)
                | WordPiece::ArithmeticExpression(_) => out.push_str(source),
            }
        }
    }
}

/// `$'a\nb'`'s content with its common escapes applied.
fn ansi_c(t: &str) -> String {
    let mut out = String::new();
    let mut chars = t.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The simple command a wrapper runs (`time`, `timeout 60`, `env A=1`, …), its environment
/// extended; `export` and bare assignments update the state and run nothing.
fn unwrap_wrappers(
    words: Vec<String>,
    mut env: Vec<(String, String)>,
    exported: &mut Vec<(String, String)>,
    vars: &mut BTreeMap<String, String>,
) -> Option<Simple> {
    let mut rest: &[String] = &words;
    loop {
        while let Some((first, tail)) = rest.split_first() {
            match assignment(first) {
                Some(a) => {
                    env.push(a);
                    rest = tail;
                }
                None => break,
            }
        }
        let (first, tail) = rest.split_first()?;
        match first.as_str() {
            "export" => {
                for a in tail.iter().filter_map(|w| assignment(w)) {
                    vars.insert(a.0.clone(), a.1.clone());
                    exported.push(a);
                }
                return None;
            }
            "time" | "nohup" | "exec" | "command" | "builtin" => rest = tail,
            "sudo" | "env" | "stdbuf" | "nice" | "taskset" | "timeout" => {
                rest = skip_wrapper_options(first, tail);
            }
            _ => break,
        }
    }
    Some(Simple {
        env,
        words: rest.to_vec(),
        status: Status::Unknown,
        after: Vec::new(),
        via: None,
        conditional: false,
        redirects: Vec::new(),
    })
}

/// The words after a wrapper's own options (and, for `timeout`, its duration; for `taskset`,
/// its CPU list).
fn skip_wrapper_options<'a>(wrapper: &str, mut rest: &'a [String]) -> &'a [String] {
    let takes_value = |opt: &str| match wrapper {
        "sudo" => matches!(
            opt,
            "-u" | "-g" | "-C" | "-D" | "-h" | "-p" | "-r" | "-t" | "-U"
        ),
        "env" => matches!(opt, "-u" | "-C" | "-S"),
        "nice" => opt == "-n",
        "timeout" => matches!(opt, "-s" | "-k" | "--signal" | "--kill-after"),
        _ => false,
    };
    while let Some((first, tail)) = rest.split_first() {
        if first == "--" {
            rest = tail;
            break;
        }
        if first.starts_with('-') && first.len() > 1 {
            rest = if takes_value(first) && !tail.is_empty() {
                &tail[1..]
            } else {
                tail
            };
            continue;
        }
        break;
    }
    match wrapper {
        "timeout" | "taskset" => rest.split_first().map_or(rest, |(_, t)| t),
        _ => rest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<String>> {
        simple_commands(line).into_iter().map(|s| s.words).collect()
    }

    #[test]
    fn operators_split_simple_commands_and_quotes_are_removed() {
        assert_eq!(
            words("cd /w && ./transfer --threads 1 --rounds 10 2>&1 | tail -n 5"),
            vec![
                vec!["cd", "/w"],
                vec!["./transfer", "--threads", "1", "--rounds", "10"],
                vec!["tail", "-n", "5"],
            ]
        );
        assert_eq!(
            words("make&&./t 'a b' \"c \\\"d\\\"\" e\\ f > out.txt; echo ok # done"),
            vec![
                vec!["make"],
                vec!["./t", "a b", "c \"d\"", "e f"],
                vec!["echo", "ok"]
            ]
        );
    }

    #[test]
    fn wrappers_and_assignments_are_looked_through() {
        let s = simple_commands(
            "export OMP_NUM_THREADS=4; time timeout -s KILL 60 env A=1 nice -n 5 ./prog 3",
        );
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].words, vec!["./prog", "3"]);
        assert_eq!(
            s[0].env,
            vec![
                ("OMP_NUM_THREADS".to_string(), "4".to_string()),
                ("A".to_string(), "1".to_string())
            ]
        );
        assert_eq!(s[0].program(), Some("prog"));
        let s = simple_commands("N=2 ./prog");
        assert_eq!(s[0].env, vec![("N".to_string(), "2".to_string())]);
        assert!(simple_commands("X=1").is_empty());
        // A shell variable set earlier on the line is substituted.
        assert_eq!(
            words("N=8; ./prog --threads $N"),
            vec![vec!["./prog", "--threads", "8"]]
        );
    }

    #[test]
    fn heredocs_comments_and_quoted_text_are_data() {
        // The heredoc writes a script; nothing in it runs.
        let mut sh = Shell::default();
        let p = sh.parse(
            "cat > run.sh <<'EOF'\n./transfer --threads 8 --rounds 100\nEOF\nchmod +x run.sh # ./transfer --threads 2",
        );
        let progs: Vec<&str> = p.commands.iter().filter_map(|s| s.program()).collect();
        assert_eq!(progs, vec!["cat", "chmod"]);
        assert_eq!(p.writes[0].path, "run.sh");
        assert_eq!(p.writes[0].content, "./transfer --threads 8 --rounds 100\n");
        assert_eq!(
            words("python3 - <<EOF\nimport os\nos.system('./transfer --threads 4')\nEOF"),
            vec![vec!["python3", "-"]]
        );
        assert_eq!(
            words("git commit -m 'run ./transfer --threads 4; done'"),
            vec![vec![
                "git",
                "commit",
                "-m",
                "run ./transfer --threads 4; done"
            ]]
        );
        // Then the script runs: its commands are followed, `$1` bound.
        let p = sh.parse("bash run.sh && sh -x ./run.sh 3");
        let progs: Vec<(&str, Option<&str>)> = p
            .commands
            .iter()
            .map(|s| (s.program().unwrap_or(""), s.via.as_deref()))
            .collect();
        assert_eq!(
            progs,
            vec![
                ("bash", None),
                ("transfer", Some("run.sh")),
                ("sh", None),
                ("transfer", Some("./run.sh"))
            ]
        );
        // A shell reading a heredoc, `bash -c`, a function: followed.
        assert_eq!(
            words("bash <<EOF\n./t 1\nEOF"),
            vec![vec!["bash"], vec!["./t", "1"]]
        );
        assert_eq!(
            words("bash -lc 'cd w && ./t 2'"),
            vec![
                vec!["bash", "-lc", "cd w && ./t 2"],
                vec!["cd", "w"],
                vec!["./t", "2"]
            ]
        );
        assert_eq!(
            words("f() { ./t \"$1\"; }; f 5"),
            vec![vec!["f", "5"], vec!["./t", "5"]]
        );
        // A loop over literal values is one run per value.
        assert_eq!(
            words("for t in 1 2 4; do ./t --threads $t; done"),
            vec![
                vec!["./t", "--threads", "1"],
                vec!["./t", "--threads", "2"],
                vec!["./t", "--threads", "4"]
            ]
        );
        // What a shell would refuse runs nothing.
        let p = Shell::default().parse("echo \"unterminated && ./t 1");
        assert!(p.unparsed && p.commands.is_empty());
        // A heredoc inside a command substitution (a commit message) is data too (brush-parser
        // 0.2 refuses this one, taken from a real session: it ends the substitution at the
        // body's `)`).
        let commit = "git add a.c && git commit -m \"$(cat <<'EOF'\nfeat(explain): add -c shorthand\n\nCo-Authored-By: Claude <noreply@anthropic.com>\nEOF\n)\" && ./t 3";
        let p = Shell::default().parse(commit);
        assert!(!p.unparsed);
        let programs: Vec<&str> = p.commands.iter().filter_map(|s| s.program()).collect();
        assert_eq!(programs, vec!["git", "git", "t"]);
        assert_eq!(p.commands[2].words, vec!["./t", "3"]);
    }

    #[test]
    fn the_lines_status_is_known_only_for_the_commands_it_reflects() {
        let s = simple_commands("cd x && make && ./t 1 | tail -n 2; ls || true");
        let st: Vec<(&str, Status)> = s
            .iter()
            .map(|c| (c.program().unwrap_or(""), c.status))
            .collect();
        assert_eq!(
            st,
            vec![
                ("cd", Status::Unknown),
                ("make", Status::Unknown),
                ("t", Status::Unknown),
                ("tail", Status::Unknown),
                ("ls", Status::Unknown),
                ("true", Status::Decides),
            ]
        );
        let s = simple_commands("cd x && make && ./t 1");
        let st: Vec<Status> = s.iter().map(|c| c.status).collect();
        assert_eq!(
            st,
            vec![
                Status::ImpliedByPass,
                Status::ImpliedByPass,
                Status::Decides
            ]
        );
        assert_eq!(s[2].after, vec![0, 1]);
        assert_eq!(Status::ImpliedByPass.result(Some(true)), None);
        assert_eq!(Status::ImpliedByPass.result(Some(false)), Some(false));
    }
}
