//! Slurm host lists (`node[1-3,7]`, `a01,b[08-10]`, `c[1-2]-ib[3-4]`) expanded into node names,
//! in order; what `scontrol show hostnames` prints, without calling it.

/// Expand a host list. Malformed brackets are kept as written (one name).
pub fn expand(list: &str) -> Vec<String> {
    split_top(list)
        .into_iter()
        .flat_map(|item| expand_one(item.trim()))
        .filter(|s| !s.is_empty())
        .collect()
}

/// Split on commas outside brackets.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn expand_one(item: &str) -> Vec<String> {
    let Some(open) = item.find('[') else {
        return vec![item.to_string()];
    };
    let Some(close) = item[open..].find(']').map(|c| c + open) else {
        return vec![item.to_string()];
    };
    let (prefix, body, rest) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    let mut values = Vec::new();
    for part in body.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (Ok(lo), Ok(hi)) = (a.parse::<u64>(), b.parse::<u64>()) else {
                    return vec![item.to_string()];
                };
                let width = a.len();
                for v in lo..=hi.min(lo.saturating_add(100_000)) {
                    values.push(format!("{v:0width$}"));
                }
            }
            None => values.push(part.to_string()),
        }
    }
    let tails = expand_one(rest);
    let mut out = Vec::new();
    for v in values {
        for t in &tails {
            out.push(format!("{prefix}{v}{t}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn host_lists_expand_like_scontrol() {
        let cases: &[(&str, &[&str])] = &[
            ("node[1-3]", &["node1", "node2", "node3"]),
            ("node1", &["node1"]),
            ("a01,b[08-10]", &["a01", "b08", "b09", "b10"]),
            ("n[1,3-4]", &["n1", "n3", "n4"]),
            ("c[1-2]-ib[3-4]", &["c1-ib3", "c1-ib4", "c2-ib3", "c2-ib4"]),
            ("", &[]),
            ("broken[1-", &["broken[1-"]),
        ];
        for (list, want) in cases {
            assert_eq!(expand(list), *want, "{list}");
        }
    }
}
