//! An errno kept as its number, for reasons and errors that are decided once and kept (the
//! host's mechanisms, cached per process): it stays `Copy` and comparable where
//! `std::io::Error` is neither, and prints exactly as `std::io::Error` does
//! (`Operation not permitted (os error 1)`).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// The calling thread's errno, right after a failed call.
    pub fn last() -> Errno {
        Errno(crate::cell::errno())
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        std::io::Error::from_raw_os_error(self.0).fmt(f)
    }
}

impl std::error::Error for Errno {}

#[cfg(test)]
mod tests {
    use super::Errno;

    #[test]
    fn prints_as_io_error_does() {
        assert_eq!(
            Errno(libc::EPERM).to_string(),
            std::io::Error::from_raw_os_error(libc::EPERM).to_string()
        );
        assert_eq!(
            Errno(libc::ENOENT).to_string(),
            "No such file or directory (os error 2)"
        );
    }
}
