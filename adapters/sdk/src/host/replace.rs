//! What replacing an output file needs from the system beyond `std`: the file attributes that
//! forbid it (`chattr +i`, `+a`), and the POSIX access ACL a replaced file keeps.
//!
//! The host writes an output to a temp file beside the target and renames it over the target.
//! An immutable or append-only target, or an append-only directory, lets the temp file be made
//! but not renamed (nor, in such a directory, removed): the run would fail after all its work and
//! leave a file nobody can delete, so these are refused first. A replaced file keeps its
//! permissions, and with an ACL the mode's group bits are the ACL's mask, not the group's own
//! access: copying only the mode would widen the group's access and drop the named entries.

use std::fs::File;
use std::io;
use std::path::Path;

/// A file attribute that forbids replacing a file, or renaming a file into a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreplaceable {
    /// `chattr +i`: not changed, renamed, removed, nor (a directory) given new entries.
    Immutable,
    /// `chattr +a`: only appended to; a directory's entries are never removed nor renamed.
    AppendOnly,
}

impl std::fmt::Display for Unreplaceable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unreplaceable::Immutable => "immutable",
            Unreplaceable::AppendOnly => "append-only",
        })
    }
}

/// The attribute of `path` (as `lsattr` shows them) that forbids replacing it (a file) or
/// renaming a new file into it (a directory). `None` when neither is set, or the file system
/// has no such attributes. Asked with `statx`, which needs no permission on the file itself (a
/// write-only drop-box directory, a file the user may not read); where `statx` cannot tell,
/// by opening the file (then `None` when it cannot be opened, and another error follows from
/// the write itself). Linux only: elsewhere `None`.
pub fn replacing_forbidden_by(path: &Path) -> Option<Unreplaceable> {
    #[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
    if let Some(known) = attributes_by_statx(path) {
        return known;
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // linux/fs.h
        const FS_IMMUTABLE_FL: libc::c_int = 0x10;
        const FS_APPEND_FL: libc::c_int = 0x20;
        let file = File::open(path).ok()?;
        let mut flags: libc::c_int = 0;
        // SAFETY: FS_IOC_GETFLAGS writes the file's flags, one `int` (the kernel writes an int
        // whatever the request's declared `long`), into `flags`, which lives on this frame for
        // the call; the descriptor is borrowed from `file`, open meanwhile. A file system
        // without attributes fails with ENOTTY and writes nothing.
        let r = unsafe { libc::ioctl(file.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) };
        if r != 0 {
            return None;
        }
        if flags & FS_IMMUTABLE_FL != 0 {
            return Some(Unreplaceable::Immutable);
        }
        if flags & FS_APPEND_FL != 0 {
            return Some(Unreplaceable::AppendOnly);
        }
        None
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// The attributes `statx` reports of `path`, or `None` when it cannot tell (an old kernel or
/// C library, a file system that does not report these two).
#[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
fn attributes_by_statx(path: &Path) -> Option<Option<Unreplaceable>> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: all zeros is a valid `statx` (integers only), to be written.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path that outlives the call; `statx` writes only `st`,
    // which lives on this frame. The attributes are returned whatever the mask asks.
    let r = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::AT_STATX_SYNC_AS_STAT,
            0,
            &mut st,
        )
    };
    let (immutable, append) = (
        libc::STATX_ATTR_IMMUTABLE as u64,
        libc::STATX_ATTR_APPEND as u64,
    );
    if r != 0 || st.stx_attributes_mask & (immutable | append) != (immutable | append) {
        return None;
    }
    Some(if st.stx_attributes & immutable != 0 {
        Some(Unreplaceable::Immutable)
    } else if st.stx_attributes & append != 0 {
        Some(Unreplaceable::AppendOnly)
    } else {
        None
    })
}

#[cfg(target_os = "linux")]
const ACL_ACCESS: &std::ffi::CStr = c"system.posix_acl_access";

/// The POSIX access ACL of the file `path` in the kernel's extended-attribute form
/// (`system.posix_acl_access`; [`acl_group_bits`] reads it), or `None` when the file has only
/// its mode (no extended entries), or the file system or system has no POSIX ACLs.
pub fn access_acl(path: &Path) -> io::Result<Option<Vec<u8>>> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
            return Ok(None);
        };
        // An ACL that grows between the two calls (ERANGE) is asked for again.
        for _ in 0..8 {
            // SAFETY: a null buffer of size 0 asks only for the value's size; `c` and the
            // attribute name are NUL-terminated strings that outlive the call.
            let n =
                unsafe { libc::getxattr(c.as_ptr(), ACL_ACCESS.as_ptr(), std::ptr::null_mut(), 0) };
            if n < 0 {
                return absent_acl(io::Error::last_os_error());
            }
            let mut value = vec![0u8; n as usize];
            // SAFETY: `getxattr` writes at most `value.len()` bytes into `value`'s buffer,
            // which lives for the call.
            let m = unsafe {
                libc::getxattr(
                    c.as_ptr(),
                    ACL_ACCESS.as_ptr(),
                    value.as_mut_ptr().cast(),
                    value.len(),
                )
            };
            if m >= 0 {
                value.truncate(m as usize);
                return Ok(Some(value));
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ERANGE) {
                return absent_acl(e);
            }
        }
        Ok(None)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        Ok(None)
    }
}

/// No ACL (`ENODATA`) and no ACLs at all (`ENOTSUP`) are both "no access ACL".
#[cfg(target_os = "linux")]
fn absent_acl(e: io::Error) -> io::Result<Option<Vec<u8>>> {
    match e.raw_os_error() {
        Some(libc::ENODATA) | Some(libc::ENOTSUP) => Ok(None),
        _ => Err(e),
    }
}

/// Gives `file` the access ACL `acl` (from [`access_acl`]; it sets the mode's permission bits
/// too), or with `None` removes an ACL of its own (one a new file inherits from its directory's
/// default ACL), leaving its mode. Removing from a file system without ACLs succeeds.
pub fn set_access_acl(file: &File, acl: Option<&[u8]>) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        let r = match acl {
            // SAFETY: `fsetxattr` reads `value.len()` bytes of `value`, and the NUL-terminated
            // name; the descriptor is borrowed from `file`, open meanwhile.
            Some(value) => unsafe {
                libc::fsetxattr(
                    fd,
                    ACL_ACCESS.as_ptr(),
                    value.as_ptr().cast(),
                    value.len(),
                    0,
                )
            },
            // SAFETY: `fremovexattr` reads only the NUL-terminated name.
            None => unsafe { libc::fremovexattr(fd, ACL_ACCESS.as_ptr()) },
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match (acl, e.raw_os_error()) {
            (None, Some(libc::ENODATA) | Some(libc::ENOTSUP)) => Ok(()),
            _ => Err(e),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        match acl {
            Some(_) => Err(io::Error::from(io::ErrorKind::Unsupported)),
            None => Ok(()),
        }
    }
}

/// The permission bits the owning group really has under the access ACL `acl` (its group entry
/// limited by its mask), in the mode's group position (`0o070`): what a copy of the file
/// without the ACL may give the group without widening its access. `None` for a value that is
/// not an ACL of version 2.
pub fn acl_group_bits(acl: &[u8]) -> Option<u32> {
    // linux/posix_acl_xattr.h: a little-endian u32 version (2), then entries of a u16 tag, a
    // u16 permission set (rwx as 4, 2, 1) and a u32 id.
    const GROUP_OBJ: u16 = 0x04;
    const MASK: u16 = 0x10;
    let (version, entries) = acl.split_first_chunk::<4>()?;
    if u32::from_le_bytes(*version) != 2 || entries.len() % 8 != 0 {
        return None;
    }
    let (mut group, mut mask) = (None, 0o7);
    for e in entries.chunks_exact(8) {
        let tag = u16::from_le_bytes([e[0], e[1]]);
        let perm = u32::from(u16::from_le_bytes([e[2], e[3]]) & 0o7);
        match tag {
            GROUP_OBJ => group = Some(perm),
            MASK => mask = perm,
            _ => {}
        }
    }
    Some((group? & mask) << 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
        let mut v = 2u32.to_le_bytes().to_vec();
        for &(tag, perm, id) in entries {
            v.extend_from_slice(&tag.to_le_bytes());
            v.extend_from_slice(&perm.to_le_bytes());
            v.extend_from_slice(&id.to_le_bytes());
        }
        v
    }

    #[test]
    fn the_group_keeps_its_own_entry_within_the_mask() {
        // user::rw- user:nobody:rw- group::r-- mask::rw- other::---
        let a = acl(&[
            (0x01, 6, u32::MAX),
            (0x02, 6, 65534),
            (0x04, 4, u32::MAX),
            (0x10, 6, u32::MAX),
            (0x20, 0, u32::MAX),
        ]);
        assert_eq!(acl_group_bits(&a), Some(0o040));
        // A mask narrower than the group entry limits it.
        let b = acl(&[
            (0x01, 7, u32::MAX),
            (0x04, 7, u32::MAX),
            (0x10, 5, u32::MAX),
        ]);
        assert_eq!(acl_group_bits(&b), Some(0o050));
        assert_eq!(acl_group_bits(&[1, 0, 0, 0]), None);
        assert_eq!(acl_group_bits(&a[..7]), None);
    }
}
