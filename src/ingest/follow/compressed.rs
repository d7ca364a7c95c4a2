//! Following a compressed log: decoded again from its start each time it grows, the text
//! past what was already fed read as new lines.

use std::io::{self, Read};

use super::{identity_of, say_trouble, take_bytes, FollowNote, Followed};
use crate::ingest::source::{self, StopReason};

/// A compressed log is decoded again from its start each time it grows (a gzip or zstd
/// stream cannot be resumed from a byte offset without keeping the decoder, and a file
/// rewritten in place would then be misread): cheap for start-up logs, quadratic for a
/// big one, so growth past this compressed size is not followed.
pub(crate) const COMPRESSED_FOLLOW_MAX: u64 = 16 << 20;

/// Where a followed compressed log stands.
#[derive(Debug, Default)]
pub(super) struct CompressedState {
    /// The compressed size last decoded.
    size: u64,
    /// Device and inode of the file last decoded.
    identity: Option<(u64, u64)>,
    /// Decoded bytes already fed.
    pub(super) decoded: u64,
    /// The error that stopped the last decoding. A gzip stream flushed but not finished
    /// ends the same way as one cut short, so it is said only at the end of the watch.
    pub(super) cut: Option<StopReason>,
    too_large: bool,
    /// A decoding at this compressed size stopped short at an error: the size is not
    /// taken, so the next look decodes the file again even if it has not grown (a write
    /// caught half done decodes whole once it is done), and only once.
    short_at: Option<u64>,
}

/// A compressed log's state, and the note that says how it is followed.
pub(super) fn compressed_state(shown: &str, notes: &mut Vec<FollowNote>) -> CompressedState {
    notes.push(FollowNote::Compressed {
        path: shown.to_string(),
    });
    CompressedState::default()
}

/// One look at a compressed log: decoded again from its start when its size changed, the
/// decoded bytes past those already fed read as new text. Another file under the path (a
/// new inode), a file now smaller, or one whose whole stream decodes to less than was fed,
/// was rewritten: a new segment. A decoding that stopped at an error and came short of
/// what was fed says nothing of the file: a stream being written can be caught mid-block,
/// and the decoder then drops what it decoded in its last step (a gzip log followed as it
/// was written was once taken for a new file this way); it is decoded again at the next
/// look (the last write of a server that died may be the one caught), then when it grows.
pub(super) fn poll_compressed(f: &mut Followed, shown: &str, notes: &mut Vec<FollowNote>) -> u64 {
    let (size, identity) = match std::fs::metadata(&f.path) {
        Ok(m) => (m.len(), identity_of(&m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if !f.gone {
                f.gone = true;
                notes.push(FollowNote::Deleted {
                    path: shown.to_string(),
                });
            }
            return 0;
        }
        Err(e) => {
            say_trouble(f, shown, e.to_string(), notes);
            return 0;
        }
    };
    let Some(state) = f.compressed.as_mut() else {
        return 0;
    };
    let other_file = state.identity.is_some_and(|id| id != identity);
    if size == state.size && !other_file && !f.gone {
        return 0;
    }
    if size > COMPRESSED_FOLLOW_MAX {
        if !state.too_large {
            state.too_large = true;
            notes.push(FollowNote::CompressedTooLarge {
                path: shown.to_string(),
                size,
            });
        }
        return 0;
    }
    let (mut bytes, error) = decode_whole(f);
    let Some(state) = f.compressed.as_mut() else {
        return 0;
    };
    let decoded = bytes.len() as u64;
    let replaced = other_file || size < state.size || f.gone;
    let short = decoded < state.decoded;
    let caught_mid_write = short && error.is_some() && !replaced;
    if caught_mid_write && state.short_at.replace(size) != Some(size) {
        // The size not taken: the next look decodes the file again.
        return 0;
    }
    state.size = size;
    state.identity = Some(identity);
    if caught_mid_write {
        return 0;
    }
    state.short_at = None;
    let rewritten = replaced || short;
    let fed = if rewritten { 0 } else { state.decoded };
    let new_segment = rewritten && state.decoded > 0;
    state.decoded = decoded;
    state.cut = error;
    if new_segment {
        f.replaced(shown, notes);
    }
    f.gone = false;
    let new = bytes.split_off(usize::try_from(fed).map_or(bytes.len(), |n| n.min(bytes.len())));
    let offset = f.offset;
    take_bytes(f, new, offset, shown, notes)
}

/// The log decoded from its start as far as it goes now, and the error that stopped it
/// (a stream still being written ends mid-frame).
fn decode_whole(f: &Followed) -> (Vec<u8>, Option<StopReason>) {
    let Some(first) = f.segments.first() else {
        return (Vec::new(), None);
    };
    let mut stream = match source::open_stream(&first.file, false) {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Some(StopReason::Error(e.to_string()))),
    };
    // What was decoded before an error stays in `bytes` (read_to_end's contract).
    let mut bytes = Vec::new();
    let error = stream.reader.read_to_end(&mut bytes).err();
    (bytes, error.map(|e| StopReason::of(&e)))
}
