//! Line iteration over an [`Input`]: the whole input when the host has it in memory, else
//! 1 MiB reads into one buffer that grows only for a line longer than itself.

use memchr::memchr;
use profconv_plugin::{Input, PluginError};
use std::io::Read;

/// Bytes asked of the input per read.
const BLOCK: usize = 1 << 20;

/// Calls `f(line, byte_offset)` for every line, without its `\n`. A final line without a newline
/// is passed too; an empty input has no line.
pub fn for_each_line(
    input: &mut Input<'_>,
    mut f: impl FnMut(&[u8], u64) -> Result<(), PluginError>,
) -> Result<(), PluginError> {
    if let Some(whole) = input.whole() {
        let mut offset = 0usize;
        while offset < whole.len() {
            let end = memchr(b'\n', &whole[offset..]).map_or(whole.len(), |i| offset + i);
            f(&whole[offset..end], offset as u64)?;
            offset = end + 1;
        }
        return Ok(());
    }
    let mut buf = vec![0u8; BLOCK];
    let (mut start, mut end) = (0usize, 0usize);
    let mut offset = 0u64; // input offset of buf[start]
    loop {
        if end == buf.len() {
            if start > 0 {
                buf.copy_within(start..end, 0);
                end -= start;
                start = 0;
            } else {
                buf.resize(buf.len() * 2, 0);
            }
        }
        let n = input.read(&mut buf[end..])?;
        if n == 0 {
            if start < end {
                f(&buf[start..end], offset)?;
            }
            return Ok(());
        }
        let mut search = end;
        end += n;
        while let Some(i) = memchr(b'\n', &buf[search..end]) {
            let nl = search + i;
            f(&buf[start..nl], offset)?;
            offset += (nl + 1 - start) as u64;
            start = nl + 1;
            search = start;
        }
    }
}
