#![doc = include_str!("../README.md")]

mod cursor;
mod keyset;

pub use cursor::{BadCursor, CursorKey, Position};
pub use keyset::{Keyset, Limit, LimitOutOfRange, Order, Page, PageRequest, Pagination};
