//! The partial-stall table: made-up quiet trees → deadlock, Go dump or not proven.
