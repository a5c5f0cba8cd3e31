//! Crossing the boundary with a profile: `ProfileRef` ↔ [`ProfileView`], and [`ProfileExport`].

use crate::abi::{ProfileExport, ProfileView};
use profconv_ir::{IrError, Profile, ProfileRef, StringsRef, ValueKind, ValueType};
use std::ffi::c_void;
use std::mem::size_of;

/// The columns a [`ProfileView`] needs that a [`ProfileRef`] does not hold contiguously.
pub(crate) struct ViewStorage {
    vt_name: Vec<u32>,
    vt_unit: Vec<u32>,
    vt_kind: Vec<u32>,
    vt_decimals: Vec<u32>,
    value_ptrs: Vec<*const i64>,
    meta_key: Vec<u32>,
    meta_value: Vec<u32>,
}

impl ViewStorage {
    pub(crate) fn new(p: &ProfileRef<'_>) -> Self {
        ViewStorage {
            vt_name: p.value_types.iter().map(|v| v.name).collect(),
            vt_unit: p.value_types.iter().map(|v| v.unit).collect(),
            vt_kind: p.value_types.iter().map(|v| v.kind as u32).collect(),
            vt_decimals: p.value_types.iter().map(|v| v.decimals).collect(),
            value_ptrs: p.sample_values.iter().map(|c| c.as_ptr()).collect(),
            meta_key: p.meta_key.clone(),
            meta_value: p.meta_value.clone(),
        }
    }

    /// A view of `p`'s columns; valid while both `p`'s data and `self` live, unmoved.
    pub(crate) fn view(&self, p: &ProfileRef<'_>) -> ProfileView {
        ProfileView {
            struct_size: size_of::<ProfileView>() as u32,
            flags: p.flags,
            n_strings: p.strings.len(),
            str_offsets: p.strings.offsets.as_ptr(),
            str_blob: p.strings.blob.as_ptr(),
            str_blob_len: p.strings.blob.len(),
            n_funcs: p.func_name.len(),
            func_name: p.func_name.as_ptr(),
            func_file: p.func_file.as_ptr(),
            func_line: p.func_line.as_ptr(),
            func_resource: p.func_resource.as_ptr(),
            n_frames: p.frame_func.len(),
            frame_func: p.frame_func.as_ptr(),
            frame_address: p.frame_address.as_ptr(),
            frame_line: p.frame_line.as_ptr(),
            n_stacks: p.stack_prefix.len(),
            stack_prefix: p.stack_prefix.as_ptr(),
            stack_frame: p.stack_frame.as_ptr(),
            n_value_types: self.vt_name.len(),
            value_type_name: self.vt_name.as_ptr(),
            value_type_unit: self.vt_unit.as_ptr(),
            value_type_kind: self.vt_kind.as_ptr(),
            value_type_decimals: self.vt_decimals.as_ptr(),
            n_samples: p.sample_stack.len(),
            sample_stack: p.sample_stack.as_ptr(),
            sample_time: p.sample_time.map_or(std::ptr::null(), |t| t.as_ptr()),
            sample_values: self.value_ptrs.as_ptr(),
            n_meta: self.meta_key.len(),
            meta_key: self.meta_key.as_ptr(),
            meta_value: self.meta_value.as_ptr(),
            n_threads: p.thread_name.len(),
            thread_name: p.thread_name.as_ptr(),
            sample_thread: p.sample_thread.map_or(std::ptr::null(), |t| t.as_ptr()),
        }
    }
}

/// A slice from an ABI pointer and count; a null or dangling pointer is fine when `len` is 0.
///
/// # Safety
/// When `len > 0`, `ptr` must point at `len` initialized `T`s that outlive `'a`.
unsafe fn column<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T], IrError> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() || !ptr.is_aligned() {
        return Err(IrError::Invalid(format!(
            "column {what} is null or misaligned"
        )));
    }
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(IrError::Invalid(format!("column {what} is too long")));
    }
    // SAFETY: non-null, aligned, size checked; validity and lifetime are the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// How much of a view to check.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Every invariant (a view from the other side of the boundary).
    Full,
    /// Pointers and lengths only: the same view passed [`Check::Full`] before.
    #[cfg_attr(not(feature = "host"), allow(dead_code))]
    Done,
}

/// Reads a [`ProfileView`] as a validated [`ProfileRef`].
///
/// # Safety
/// Every non-null pointer in `view` must point at as many readable elements as its count says,
/// valid for `'a`. Everything else (lengths, indices, UTF-8, order) is checked here.
pub(crate) unsafe fn profile_ref_from_view<'a>(
    view: &ProfileView,
    check: Check,
) -> Result<ProfileRef<'a>, IrError> {
    if (view.struct_size as usize) < crate::abi::min_size::PROFILE_VIEW {
        return Err(IrError::Invalid(format!(
            "profile view of {} bytes is smaller than ABI 1.0's {}: the plugin was built \
             before ABI 1.0's final layout (a development build); rebuild it against this SDK",
            view.struct_size,
            crate::abi::min_size::PROFILE_VIEW
        )));
    }
    let n_vt = view.n_value_types;
    // One offset more than strings: a count of `usize::MAX` would wrap to 0 and be read as an
    // empty table.
    let n_offsets = view.n_strings.checked_add(1).ok_or_else(|| {
        IrError::Invalid(format!("n_strings {} is past any table", view.n_strings))
    })?;
    let (blob, offsets, vt_name, vt_unit, vt_kind, vt_dec, value_ptrs) =
        // SAFETY: the caller's contract covers every pointer/count pair below.
        unsafe {
        (
            column(view.str_blob, view.str_blob_len, "str_blob")?,
            column(view.str_offsets, n_offsets, "str_offsets")?,
            column(view.value_type_name, n_vt, "value_type_name")?,
            column(view.value_type_unit, n_vt, "value_type_unit")?,
            column(view.value_type_kind, n_vt, "value_type_kind")?,
            column(view.value_type_decimals, n_vt, "value_type_decimals")?,
            column(view.sample_values, n_vt, "sample_values")?,
        )
    };
    let blob = match check {
        Check::Full => std::str::from_utf8(blob)
            .map_err(|e| IrError::Invalid(format!("string blob is not UTF-8: {e}")))?,
        // SAFETY: `Check::Done` is only used on a view that passed `Check::Full`, which
        // verified this very blob is UTF-8; the producer keeps it unchanged until release.
        Check::Done => unsafe { std::str::from_utf8_unchecked(blob) },
    };
    let mut value_types = Vec::with_capacity(n_vt);
    for i in 0..n_vt {
        let kind = ValueKind::from_code(vt_kind[i])
            .ok_or_else(|| IrError::Invalid(format!("value type {i} has unknown kind")))?;
        value_types.push(ValueType {
            name: vt_name[i],
            unit: vt_unit[i],
            kind,
            decimals: vt_dec[i],
        });
    }
    let n = view.n_samples;
    let mut sample_values = Vec::with_capacity(n_vt);
    for (i, &ptr) in value_ptrs.iter().enumerate() {
        // SAFETY: each value column pointer covers `n_samples` values (caller's contract).
        sample_values.push(unsafe { column(ptr, n, &format!("sample_values[{i}]"))? });
    }
    // SAFETY: as above for every remaining column.
    let p = unsafe {
        ProfileRef {
            flags: view.flags,
            strings: StringsRef { blob, offsets },
            func_name: column(view.func_name, view.n_funcs, "func_name")?,
            func_file: column(view.func_file, view.n_funcs, "func_file")?,
            func_line: column(view.func_line, view.n_funcs, "func_line")?,
            func_resource: column(view.func_resource, view.n_funcs, "func_resource")?,
            frame_func: column(view.frame_func, view.n_frames, "frame_func")?,
            frame_address: column(view.frame_address, view.n_frames, "frame_address")?,
            frame_line: column(view.frame_line, view.n_frames, "frame_line")?,
            stack_prefix: column(view.stack_prefix, view.n_stacks, "stack_prefix")?,
            stack_frame: column(view.stack_frame, view.n_stacks, "stack_frame")?,
            value_types,
            sample_stack: column(view.sample_stack, n, "sample_stack")?,
            sample_time: if view.sample_time.is_null() {
                None
            } else {
                Some(column(view.sample_time, n, "sample_time")?)
            },
            sample_thread: if view.sample_thread.is_null() {
                None
            } else {
                Some(column(view.sample_thread, n, "sample_thread")?)
            },
            thread_name: column(view.thread_name, view.n_threads, "thread_name")?,
            sample_values,
            meta_key: column(view.meta_key, view.n_meta, "meta_key")?.to_vec(),
            meta_value: column(view.meta_value, view.n_meta, "meta_value")?.to_vec(),
        }
    };
    if check == Check::Full {
        p.validate()?;
    }
    Ok(p)
}

/// What a [`ProfileExport`]'s `private_data` owns: the profile and the side columns.
struct ExportedProfile {
    profile: Profile,
    storage: ViewStorage,
}

unsafe extern "C" fn release_exported(export: *mut ProfileExport) {
    if export.is_null() {
        return;
    }
    // SAFETY: the host passes back the export this side filled; `private_data` came from
    // `Box::into_raw` in `export_profile` and is freed exactly once (release is then cleared).
    unsafe {
        let e = &mut *export;
        if !e.private_data.is_null() {
            drop(Box::from_raw(e.private_data as *mut ExportedProfile));
        }
        e.private_data = std::ptr::null_mut();
        e.release = None;
    }
}

/// Moves `profile` into a [`ProfileExport`]: no column is copied.
pub(crate) fn export_profile(profile: Profile) -> ProfileExport {
    let storage = ViewStorage::new(&profile.view());
    let boxed = Box::new(ExportedProfile { profile, storage });
    // The view points into the boxed profile's heap buffers, which do not move with the box.
    let view = boxed.storage.view(&boxed.profile.view());
    ProfileExport {
        view,
        release: Some(release_exported),
        private_data: Box::into_raw(boxed) as *mut c_void,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A view smaller than ABI 1.0's final layout comes from a plugin built before it was fixed
    /// (a development build that still says 1.0): the error says to rebuild it, not only that
    /// the view is small.
    #[test]
    fn a_view_of_an_early_layout_says_to_rebuild_the_plugin() {
        let profile = Profile::default();
        let p = profile.view();
        let storage = ViewStorage::new(&p);
        let mut view = storage.view(&p);
        view.struct_size = 232;
        // SAFETY: every pointer of the view points into `profile` and `storage`, alive here.
        let e = unsafe { profile_ref_from_view(&view, Check::Full) }.unwrap_err();
        let message = e.to_string();
        assert!(
            message.contains("profile view of 232 bytes is smaller than ABI 1.0's")
                && message.contains("rebuild it against this SDK"),
            "{message}"
        );
        // The view as it is: read.
        view.struct_size = size_of::<ProfileView>() as u32;
        // SAFETY: as above.
        assert!(unsafe { profile_ref_from_view(&view, Check::Full) }.is_ok());
    }
}
