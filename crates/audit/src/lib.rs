#![doc = include_str!("../README.md")]

mod append;
mod checkpoint;
mod entry;
mod list;
mod recent;
mod verify;

pub use append::{Appended, append};
pub use checkpoint::{
    Checkpoint, CheckpointKey, Checkpointer, EVERY, EVERY_ENTRIES, PublicKey, checkpoints,
};
pub use entry::{Actor, Entry, GENESIS, Kind, NewEntry, timestamp, write_canonical};
pub use list::{DEFAULT_LIMIT, Filter, ListError, latest, list};
pub use recent::{ANCHOR_REACH, Anchor, RECENT_ENTRIES, RecentVerified, verify_recent};
pub use verify::{Broken, Verified, verify};
