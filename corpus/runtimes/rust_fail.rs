//! rust_fail: the Rust standard library's own fatal reports, and twins that handle the same
//! failure. Built with `rustc -O -o rust_fail rust_fail.rs`.
//!
//! Usage: rust_fail MODE
//!
//!   alloc            a 4 EiB Vec (more than any address space): "memory allocation of … bytes failed", abort -> out_of_memory
//!   try-alloc        the same through try_reserve, the error handled -> ok
//!   poison           a thread panics holding a Mutex; main's lock().unwrap() panics on the
//!                    PoisonError, exit 101 -> exit_failure, cause poisoned_lock
//!   poison-recovered main takes the poisoned lock's value (into_inner) and goes on -> ok
use std::sync::{Arc, Mutex};

fn poisoned() -> Arc<Mutex<u32>> {
    let m = Arc::new(Mutex::new(7));
    let held = Arc::clone(&m);
    let _ = std::thread::spawn(move || {
        let _guard = held.lock().unwrap();
        panic!("worker failed while holding the lock");
    })
    .join();
    m
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    match mode.as_str() {
        "alloc" => {
            // black_box: the optimizer may not leave the allocation out.
            let mut v: Vec<u8> = Vec::with_capacity(std::hint::black_box(1 << 62));
            v.push(1);
            println!("{}", std::hint::black_box(&v).len());
        }
        "try-alloc" => {
            let mut v: Vec<u8> = Vec::new();
            match v.try_reserve(std::hint::black_box(1 << 62)) {
                Ok(()) => println!("reserved"),
                Err(e) => println!("could not reserve ({e}); went on"),
            }
        }
        "poison" => {
            let m = poisoned();
            let g = m.lock().unwrap();
            println!("{}", *g);
        }
        "poison-recovered" => {
            let m = poisoned();
            let g = m.lock().unwrap_or_else(|e| e.into_inner());
            println!("recovered {}", *g);
        }
        _ => {
            eprintln!("rust_fail: unknown mode {mode}");
            std::process::exit(64);
        }
    }
}
