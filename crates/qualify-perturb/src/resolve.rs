//! Where a perturbation point is in the source: the caller's return address, through the
//! executable mapping the shim logged, to the ELF file's virtual address (its program headers),
//! to `file:line` by `addr2line` (binutils) or `eu-addr2line` (elfutils) where the file has debug
//! information. Without either tool, or without debug information, a point keeps its address.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};

use crate::log::{Mapping, Point};

/// One PT_LOAD segment: file offset, virtual address, size in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

/// The PT_LOAD segments of a 64-bit little-endian ELF file.
fn segments(path: &str) -> Option<Vec<Segment>> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut head = [0u8; 64];
    f.read_exact(&mut head).ok()?;
    if &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u64_at = |b: &[u8], o: usize| -> Option<u64> {
        Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
    };
    let u16_at = |b: &[u8], o: usize| -> Option<u16> {
        Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
    };
    let phoff = u64_at(&head, 32)?;
    let phentsize = u16_at(&head, 54)? as u64;
    let phnum = u16_at(&head, 56)? as u64;
    if phentsize < 56 || phnum > 256 {
        return None;
    }
    let mut table = vec![0u8; (phentsize * phnum) as usize];
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(phoff)).ok()?;
    f.read_exact(&mut table).ok()?;
    let mut out = Vec::new();
    for i in 0..phnum as usize {
        let e = &table[i * phentsize as usize..];
        let kind = u32::from_le_bytes(e.get(0..4)?.try_into().ok()?);
        if kind == 1 {
            out.push(Segment {
                offset: u64_at(e, 8)?,
                vaddr: u64_at(e, 16)?,
                filesz: u64_at(e, 32)?,
            });
        }
    }
    Some(out)
}

/// The file and its virtual address of a run-time address, through the process's mappings.
pub fn locate(maps: &[Mapping], process: u32, addr: u64) -> Option<(String, u64)> {
    let m = maps
        .iter()
        .find(|m| m.process == process && m.start <= addr && addr < m.end)?;
    let file_off = addr - m.start + m.offset;
    let seg = segments(&m.path)?
        .into_iter()
        .find(|s| s.offset <= file_off && file_off < s.offset + s.filesz)?;
    Some((m.path.clone(), seg.vaddr + (file_off - seg.offset)))
}

/// `file:line` for each point whose caller has debug information (keyed by the point's index).
/// One `addr2line` per file.
pub fn lines(points: &[Point], maps: &[Mapping]) -> BTreeMap<usize, String> {
    let mut by_file: BTreeMap<String, Vec<(usize, u64)>> = BTreeMap::new();
    for (i, p) in points.iter().enumerate() {
        // The return address is the instruction after the call: look one byte back.
        if let Some((file, vaddr)) = locate(maps, p.process, p.ret.saturating_sub(1)) {
            by_file.entry(file).or_default().push((i, vaddr));
        }
    }
    let mut out = BTreeMap::new();
    for (file, items) in by_file {
        let addrs: Vec<String> = items.iter().map(|(_, a)| format!("{a:#x}")).collect();
        let Some(text) = addr2line(&file, &addrs) else {
            continue;
        };
        for ((i, _), line) in items.iter().zip(text.lines()) {
            let line = line.trim();
            // "??:0", "??:?", "file.c:?" say nothing.
            if line.starts_with("??") || line.ends_with(":?") || line.ends_with(":0") {
                continue;
            }
            // Only the file's name: a build directory says nothing to the reader.
            let short = line.rsplit('/').next().unwrap_or(line);
            let short = short.split(" (discriminator").next().unwrap_or(short);
            out.insert(*i, short.to_string());
        }
    }
    out
}

/// One line of `file:line` per address, from whichever tool is installed.
fn addr2line(file: &str, addrs: &[String]) -> Option<String> {
    for tool in ["addr2line", "eu-addr2line"] {
        let out = Command::new(tool)
            .arg("-e")
            .arg(file)
            .args(addrs)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        if let Ok(o) = out
            && o.status.success()
        {
            return Some(String::from_utf8_lossy(&o.stdout).into_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_load_segments_of_a_real_elf_file() {
        let exe = std::env::current_exe().unwrap();
        let segs = segments(exe.to_str().unwrap()).unwrap();
        assert!(!segs.is_empty());
        assert!(segments("/etc/hostname").is_none());
    }
}
