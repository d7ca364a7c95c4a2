//! The bytes of a record line's prefix that name its rank or process, found without a
//! regex.

/// How far into a record line its identity's closing bracket is looked for.
pub(super) const IDENTITY_HEAD: usize = 96;

/// The bytes of a record line's prefix that name its rank or process, found without a
/// regex: the tags after the time in `[YYYY-MM-DD HH:MM:SS DP1 TP3]`, or the name and pid
/// in `(Worker_TP3 pid=412)`. One `memchr` and a hash of a few bytes per record line no
/// shape answers (`shape`), so traffic lines cost little; the grammar's prefix regex runs
/// once per new key.
pub(super) fn identity_key(line: &[u8]) -> Option<&[u8]> {
    let head = &line[..line.len().min(IDENTITY_HEAD)];
    match head.first()? {
        b'[' => {
            let close = memchr::memchr(b']', head)?;
            let inner = &head[1..close];
            // A stamp and its tags (`2026-03-04 10:11:12 TP3`): the last `:` is a few bytes
            // from the end and the space after it nearer still, so byte loops find them;
            // two more `memchr` calls cost ~60 instructions a record line more, 4 % of
            // scanning a serving log.
            let colon = inner.iter().rposition(|&b| b == b':')?;
            let space = inner[colon..].iter().position(|&b| b == b' ')? + colon;
            let tags = &inner[space..];
            tags.iter().any(u8::is_ascii_digit).then_some(tags)
        }
        b'(' => {
            let close = memchr::memchr(b')', head)?;
            Some(&head[1..close])
        }
        _ => None,
    }
}

/// Where the bracket that closes a line's first tag lies (`]` of `[`, `)` of `(`), looked
/// for as far as `identity_key` looks; `None` when the line begins with neither.
pub(super) fn closing_bracket(line: &[u8]) -> Option<usize> {
    let head = &line[..line.len().min(IDENTITY_HEAD)];
    match head.first()? {
        b'[' => memchr::memchr(b']', head),
        b'(' => memchr::memchr(b')', head),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_key_is_the_tags_after_the_time_or_the_process_name() {
        let key = |line: &str| identity_key(line.as_bytes()).map(|k| k.to_vec());
        let some = |k: &str| Some(k.as_bytes().to_vec());
        assert_eq!(
            key("[2026-03-04 10:11:12 DP1 TP3] Decode batch."),
            some(" DP1 TP3")
        );
        assert_eq!(key("[10:11:12 TP0] Load weight begin."), some(" TP0"));
        // After the last `:` of the bracket, not the time's first.
        assert_eq!(key("[2026-03-04 10:11:12 node:7 TP3] x"), some(" TP3"));
        assert_eq!(
            key("(Worker_TP3 pid=412) INFO 03-04 10:11:12 [x.py:1] y"),
            some("Worker_TP3 pid=412")
        );
        // No tags after the time, tags with no number, no stamp, no bracket at all.
        assert_eq!(key("[2026-03-04 10:11:12] server_args=ServerArgs()"), None);
        assert_eq!(key("[2026-03-04 10:11:12 main] up"), None);
        assert_eq!(key("[gpu_id=0] Load weight begin."), None);
        assert_eq!(key("Loading safetensors checkpoint shards"), None);
    }
}
