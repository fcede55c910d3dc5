//! A small shell lexer for the commands agents record: a command line becomes its simple
//! commands (split at `&&`, `||`, `;`, `|`, `&`, newlines and parentheses), each with its
//! words (quotes and escapes removed), the `NAME=value` assignments before its program, and
//! redirections dropped. Wrappers that only change how a program runs (`time`, `timeout 60`,
//! `env A=1`, `nice -n 5`, `sudo`, `nohup`, `exec`, `command`, `stdbuf -oL`) are looked
//! through. `export NAME=value` applies to the simple commands after it on the same line.
//!
//! Hand-written because the maintained word splitter in the dependency tree (`shlex`) splits
//! words only: it has no operators, so `make&&./t` would stay one word.

/// One simple command: the program and its arguments, and the environment it was given on the
/// same line (its own assignments and earlier `export`s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simple {
    pub env: Vec<(String, String)>,
    pub words: Vec<String>,
}

impl Simple {
    /// The program's file name (`./build/transfer` → `transfer`).
    pub fn program(&self) -> Option<&str> {
        self.words.first().map(|w| basename(w))
    }
}

/// The last path component of `word`.
pub fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    /// `&&`, `||`, `;`, `|`, `&`, newline, `(`, `)`.
    Break,
}

/// Split a command line into its simple commands.
pub fn simple_commands(line: &str) -> Vec<Simple> {
    let mut out = Vec::new();
    let mut exported: Vec<(String, String)> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut flush = |words: &mut Vec<String>, exported: &mut Vec<(String, String)>| {
        if words.is_empty() {
            return;
        }
        let taken = std::mem::take(words);
        if let Some(simple) = simple(taken, exported) {
            out.push(simple);
        }
    };
    for token in tokens(line) {
        match token {
            Token::Word(w) => words.push(w),
            Token::Break => flush(&mut words, &mut exported),
        }
    }
    flush(&mut words, &mut exported);
    out
}

/// `NAME=value` when `word` is an assignment.
pub fn assignment(word: &str) -> Option<(String, String)> {
    let (name, value) = word.split_once('=')?;
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    ok.then(|| (name.to_string(), value.to_string()))
}

fn simple(words: Vec<String>, exported: &mut Vec<(String, String)>) -> Option<Simple> {
    let mut env = exported.clone();
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
        let Some((first, tail)) = rest.split_first() else {
            // Only assignments: they set shell variables, which later commands do not see
            // unless exported; keep none.
            return None;
        };
        match first.as_str() {
            "export" => {
                exported.extend(tail.iter().filter_map(|w| assignment(w)));
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

/// Words and breaks, quotes removed; redirections and comments dropped.
fn tokens(line: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    // The next word is a redirection's target.
    let mut redirect = false;
    let mut chars = line.chars().peekable();
    let end_word =
        |out: &mut Vec<Token>, word: &mut String, in_word: &mut bool, redirect: &mut bool| {
            if *in_word {
                if *redirect {
                    *redirect = false;
                } else {
                    out.push(Token::Word(std::mem::take(word)));
                }
                word.clear();
                *in_word = false;
            }
        };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some(&n @ ('"' | '\\' | '$' | '`')) => {
                                word.push(n);
                                chars.next();
                            }
                            Some('\n') => {
                                chars.next();
                            }
                            _ => word.push('\\'),
                        },
                        _ => word.push(q),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => {
                    in_word = true;
                    word.push(n);
                }
            },
            '#' if !in_word => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                out.push(Token::Break);
            }
            ' ' | '\t' | '\r' => end_word(&mut out, &mut word, &mut in_word, &mut redirect),
            '\n' | ';' | '(' | ')' => {
                end_word(&mut out, &mut word, &mut in_word, &mut redirect);
                if c == ';' && chars.peek() == Some(&';') {
                    chars.next();
                }
                out.push(Token::Break);
            }
            '&' | '|' => {
                end_word(&mut out, &mut word, &mut in_word, &mut redirect);
                if chars.peek() == Some(&c) || (c == '|' && chars.peek() == Some(&'&')) {
                    chars.next();
                }
                out.push(Token::Break);
            }
            '>' | '<' => {
                // `2>`, `&>`: a word of digits before the operator is its file descriptor.
                if in_word && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                end_word(&mut out, &mut word, &mut in_word, &mut redirect);
                while let Some(&n) = chars.peek() {
                    if matches!(n, '>' | '<' | '|') {
                        chars.next();
                    } else {
                        break;
                    }
                }
                if chars.peek() == Some(&'&') {
                    // `>&2`: the target is a descriptor.
                    chars.next();
                }
                redirect = true;
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut out, &mut word, &mut in_word, &mut redirect);
    out
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
    }
}
