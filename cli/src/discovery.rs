//! Where plugins come from, in order: `--plugin PATH`, `PROFCONV_PLUGIN_PATH`, the user plugin
//! directory, the executable's directory, and the installed layout `<exe>/../lib/profconv/plugins`.
//! In directories only files named `{DLL_PREFIX}profconv_plugin_*{DLL_SUFFIX}` are opened; the
//! current directory is never searched unless named explicitly.

use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::path::{Path, PathBuf};

/// Why a place is searched (shown by `profconv formats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `--plugin PATH`.
    CommandLine,
    /// `PROFCONV_PLUGIN_PATH`.
    EnvPath,
    /// The user plugin directory.
    UserDir,
    /// Next to the `profconv` executable.
    ExeDir,
    /// `<exe>/../lib/profconv/plugins`.
    InstallDir,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::CommandLine => "--plugin",
            Source::EnvPath => "PROFCONV_PLUGIN_PATH",
            Source::UserDir => "user plugin directory",
            Source::ExeDir => "next to profconv",
            Source::InstallDir => "installed plugins",
        }
    }
}

/// A file to try loading, and why.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub path: PathBuf,
    pub source: Source,
    /// Why it must not be loaded, if it must not (see [`untrusted`]).
    pub refused: Option<String>,
    /// Named by the user as a file (`--plugin FILE`, a file in `PROFCONV_PLUGIN_PATH`), not
    /// found by scanning a directory: failing to load it is an error, not a warning.
    pub explicit: bool,
}

/// Loading a library runs its code with the user's rights, so a plugin that another user could
/// have replaced is refused: a file, or the directory holding it, writable by all users, or
/// owned by a user other than this one and root (its owner may rewrite it, or the directory's
/// entries, whatever the mode says: a directory another user made in /tmp before this one
/// copied plugins into it); beside the executable, its owner's are loaded too ([`exe_owner`]).
/// (Group-writable is allowed: with per-user groups and umask 002 every build directory is.)
#[cfg(unix)]
pub fn untrusted(file: &Path) -> Option<String> {
    untrusted_but(file, None)
}

/// The owner of the running `profconv`, who could rewrite it: the plugins installed beside it
/// ([`Source::ExeDir`], [`Source::InstallDir`]) may be theirs too. `sudo
/// ./target/release/profconv` on a user's own build, or a system install seen from a user
/// namespace (where root's files show as the overflow uid), refused every plugin beside it as
/// another user's.
#[cfg(unix)]
fn exe_owner() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let exe = exe_path()?;
    Some(std::fs::metadata(exe).ok()?.uid())
}

/// The running executable: `std::env::current_exe` (on Linux, `/proc/self/exe`), else, where
/// that cannot be read (a chroot or a sandbox without /proc), the name it was started by: a
/// path (with a `/`), or the first file of that name in `PATH`, as the shell found it.
pub fn exe_path() -> Option<PathBuf> {
    if let Ok(exe) = std::env::current_exe() {
        return Some(exe);
    }
    let name = PathBuf::from(std::env::args_os().next()?);
    if name.components().count() > 1 {
        return Some(name);
    }
    in_path(&name, &std::env::var_os("PATH")?)
}

/// The first file named `name` in the absolute directories of `path` that the shell would run:
/// a regular file with an execute bit (a shell passes over one without, as `execvp` does, and
/// runs the next; taking it named a directory that is not the executable's).
fn in_path(name: &Path, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && executable(&m)))
}

#[cfg(unix)]
fn executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    true
}

/// [`untrusted`], trusting also the files of user `also` (the executable's owner).
#[cfg(unix)]
fn untrusted_but(file: &Path, also: Option<u32>) -> Option<String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let me = profconv_plugin::host::effective_uid();
    let check = |p: &Path, what: &str| {
        let meta = std::fs::metadata(p).ok()?;
        let mode = meta.permissions().mode();
        // A sticky world-writable directory (like /tmp) still lets others add files there.
        if mode & 0o002 != 0 {
            return Some(format!(
                "refusing {}: its {what} {} is writable by all users (mode {:o}); \
                 `chmod o-w` it to load the plugin",
                crate::io::shown(file),
                crate::io::shown(p),
                mode & 0o7777
            ));
        }
        let owner = meta.uid();
        (owner != me && owner != 0 && Some(owner) != also).then(|| {
            format!(
                "refusing {}: its {what} {} belongs to another user (uid {owner}), who could \
                 replace the plugin; only plugins owned by you or root{} are loaded: `chown` \
                 it to load the plugin",
                crate::io::shown(file),
                crate::io::shown(p),
                match also {
                    Some(_) => " (or, beside profconv, by its owner)",
                    None => "",
                },
            )
        })
    };
    // The directory a path's last component lives in (`.` for a bare name: `""` names
    // nothing, and checking it found nothing to refuse).
    let dir_of = |p: &Path| match p.parent() {
        Some(d) if d.as_os_str().is_empty() => Some(PathBuf::from(".")),
        d => d.map(Path::to_path_buf),
    };
    if let Some(why) = check(file, "file").or_else(|| check(&dir_of(file)?, "directory")) {
        return Some(why);
    }
    // A symbolic link is as safe as the places it leads through: whoever can replace a link on
    // the way, or the library at its end, chooses the code loaded (the file itself was checked
    // through the link above).
    let mut p = file.to_path_buf();
    for _ in 0..40 {
        let Ok(to) = std::fs::read_link(&p) else {
            break;
        };
        p = match (to.is_relative(), dir_of(&p)) {
            (true, Some(dir)) => dir.join(to),
            _ => to,
        };
        if let Some(why) = check(&dir_of(&p)?, "link's target directory") {
            return Some(why);
        }
    }
    let real = file.canonicalize().ok()?;
    check(real.parent()?, "real directory")
}

/// On other systems no permission check is made.
#[cfg(not(unix))]
pub fn untrusted(_file: &Path) -> Option<String> {
    None
}

fn candidate(path: PathBuf, source: Source, explicit: bool) -> Candidate {
    #[cfg(unix)]
    let refused = match source {
        Source::ExeDir | Source::InstallDir => untrusted_but(&path, exe_owner()),
        _ => untrusted(&path),
    };
    #[cfg(not(unix))]
    let refused = untrusted(&path);
    Candidate {
        refused,
        path,
        source,
        explicit,
    }
}

/// True for file names a plugin directory may hold.
pub fn is_plugin_file_name(name: &str) -> bool {
    let prefix = format!("{DLL_PREFIX}profconv_plugin_");
    name.starts_with(&prefix)
        && name.ends_with(DLL_SUFFIX)
        && name.len() > prefix.len() + DLL_SUFFIX.len()
}

/// The user plugin directory (`$XDG_DATA_HOME/profconv/plugins`, else
/// `~/.local/share/profconv/plugins`; the platform's data directory elsewhere).
pub fn user_plugin_dir() -> Option<PathBuf> {
    if cfg!(target_os = "macos") {
        return std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join("Library/Application Support/profconv/plugins"));
    }
    if cfg!(windows) {
        return std::env::var_os("APPDATA").map(|a| PathBuf::from(a).join("profconv\\plugins"));
    }
    // A relative value is ignored, as the XDG spec says: it would name a directory under the
    // current one, which is never searched unless the user names it.
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    match absolute("XDG_DATA_HOME") {
        Some(d) => Some(d.join("profconv/plugins")),
        None => absolute("HOME").map(|h| h.join(".local/share/profconv/plugins")),
    }
}

fn scan_dir(dir: &Path, source: Source, out: &mut Vec<Candidate>) {
    let mut files = plugin_files(dir);
    files.sort(); // deterministic order within a directory
    out.extend(files.into_iter().map(|path| candidate(path, source, false)));
}

/// The plugin files a directory holds: files (or links to files) named as plugin files.
fn plugin_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(is_plugin_file_name))
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect()
}

/// For each directory the user named with `--plugin` that holds no plugin file, what to say:
/// the files of a plugin directory are found by their names, so a library named otherwise
/// (`cargo build` names a crate `lib<crate name>.so`) is skipped there without a word, and
/// the run then only misses its formats.
pub fn dirs_without_plugins(explicit: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for dir in explicit.iter().filter(|p| p.is_dir()) {
        // Each directory once, however often it is named.
        let canon = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if seen.contains(&canon) {
            continue;
        }
        seen.push(canon);
        // What scanning the directory finds (files, not directories or broken links).
        if !plugin_files(dir).is_empty() {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut libraries: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(DLL_SUFFIX))
            .collect();
        libraries.sort();
        let named_otherwise = match libraries.first() {
            Some(l) => format!(
                "; {} is named otherwise: give it as a file, `--plugin {}`",
                crate::io::shown(Path::new(l)),
                crate::io::shown(&dir.join(l))
            ),
            None => String::new(),
        };
        out.push(format!(
            "--plugin {}: no plugin file in this directory (plugin files are named \
             {DLL_PREFIX}profconv_plugin_NAME{DLL_SUFFIX}){named_otherwise}",
            crate::io::shown(dir)
        ));
    }
    out
}

/// Every candidate plugin file, in discovery order.
pub fn candidates(explicit: &[PathBuf], use_defaults: bool) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in explicit {
        if p.is_dir() {
            scan_dir(p, Source::CommandLine, &mut out);
        } else {
            // A file named explicitly is loaded whatever its name: the user chose it (a path
            // that does not exist is taken as a file too, so that naming it is an error).
            out.push(candidate(p.clone(), Source::CommandLine, true));
        }
    }
    if let Some(paths) = std::env::var_os("PROFCONV_PLUGIN_PATH") {
        for dir in std::env::split_paths(&paths).filter(|d| !d.as_os_str().is_empty()) {
            // An entry that is a file, or that does not exist but is named like a library, names
            // a plugin file; anything else is a directory to scan.
            let names_library = !dir.exists()
                && dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(DLL_SUFFIX));
            if dir.is_file() || names_library {
                out.push(candidate(dir, Source::EnvPath, true));
            } else {
                scan_dir(&dir, Source::EnvPath, &mut out);
            }
        }
    }
    if !use_defaults {
        return out;
    }
    for (source, dir) in default_dirs() {
        scan_dir(&dir, source, &mut out);
    }
    out
}

/// The directories searched unless `--no-default-plugins`, in order: the user plugin
/// directory, the executable's directory and `<exe>/../lib/profconv/plugins`.
pub fn default_dirs() -> Vec<(Source, PathBuf)> {
    let mut out = Vec::new();
    if let Some(d) = user_plugin_dir() {
        out.push((Source::UserDir, d));
    }
    if let Some(exe_dir) = exe_path()
        .and_then(|e| e.canonicalize().ok())
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        out.push((Source::ExeDir, exe_dir.clone()));
        out.push((Source::InstallDir, exe_dir.join("../lib/profconv/plugins")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without /proc, `profconv` started by name is looked for in `PATH` as the shell looked
    /// for it: a file of that name without an execute bit (a download not yet `chmod +x`) is
    /// passed over, as the shell passed over it; taking it searched the wrong directory for
    /// plugins, and trusted its owner's files there.
    #[cfg(unix)]
    #[test]
    fn the_executable_found_in_path_is_one_the_shell_would_run() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let (first, second) = (d.path().join("first"), d.path().join("second"));
        for dir in [&first, &second] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("profconv"), b"x").unwrap();
        }
        let mode = |p: &Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
        mode(&first.join("profconv"), 0o644).unwrap();
        mode(&second.join("profconv"), 0o755).unwrap();
        let path = std::env::join_paths([&first, &second]).unwrap();
        assert_eq!(
            in_path(Path::new("profconv"), &path),
            Some(second.join("profconv"))
        );
    }

    #[test]
    fn only_prefixed_libraries_are_plugin_files() {
        let ok = format!("{DLL_PREFIX}profconv_plugin_folded{DLL_SUFFIX}");
        assert!(is_plugin_file_name(&ok));
        assert!(!is_plugin_file_name(&format!(
            "{DLL_PREFIX}profconv_plugin_{DLL_SUFFIX}"
        )));
        assert!(!is_plugin_file_name(&format!(
            "{DLL_PREFIX}profconv_testplugin_oldabi{DLL_SUFFIX}"
        )));
        assert!(!is_plugin_file_name(&format!(
            "{DLL_PREFIX}profconv_plugin.rlib"
        )));
        assert!(!is_plugin_file_name("profconv_plugin_folded.txt"));
    }

    #[cfg(unix)]
    #[test]
    fn plugins_writable_by_others_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let lib = dir
            .path()
            .join(format!("{DLL_PREFIX}profconv_plugin_x{DLL_SUFFIX}"));
        std::fs::write(&lib, b"not really a library").unwrap();
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(untrusted(&lib), None);
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(untrusted(&lib).unwrap().contains("file"));
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let why = untrusted(&lib).unwrap();
        assert!(why.contains("directory") && why.contains("777"), "{why}");
    }
}
