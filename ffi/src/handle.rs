//! Who owns what conch hands to C as a pointer.
//!
//! Each C type given out by pointer (a handle such as `conch_shell`, a
//! result struct) implements [`Castable`], which names the Rust value behind
//! the pointer and how C holds it: in a `Box` (one owner, freed once) or in
//! an `Arc` (the handle holds one strong reference; a blocking call takes
//! its own, so the handle may be freed from another thread meanwhile).
//! Pointers are made and taken back only by the functions below, so every
//! `into_raw` has its `from_raw` here and nowhere else.
//!
//! An opaque handle type (`conch_shell`) is never instantiated: its pointer
//! is the pointer to its `RustType` (`Shell`), cast. A `#[repr(C)]` struct C
//! reads (`conch_bash_result`) is its own `RustType`.

use std::ops::Deref;
use std::sync::Arc;

use crate::boundary::ref_arg;
use crate::status::{FfiError, FfiResult};

/// A C type handed out by pointer, and the Rust value that pointer owns.
pub(crate) trait Castable {
    /// How C holds the value: [`OwnershipBox`] or [`OwnershipArc`].
    type Ownership: Ownership;
    /// The value the pointer points to.
    type RustType;
}

/// The value is in a `Box`: the pointer is its only owner.
pub(crate) enum OwnershipBox {}

/// The value is in an `Arc`: the pointer holds one strong reference.
pub(crate) enum OwnershipArc {}

/// A kind of ownership: how a value becomes a raw pointer and back.
pub(crate) trait Ownership {
    /// What owns the value on the Rust side (`Box<T>`, `Arc<T>`).
    type Owner<T>: Deref<Target = T>;

    /// Moves `value` to the heap and gives up its ownership as a pointer.
    fn into_raw<T>(value: T) -> *const T;

    /// Takes back the ownership given up by [`Ownership::into_raw`].
    ///
    /// # Safety
    /// `p` came from `into_raw` of this same ownership and `T`, and the
    /// ownership it carries was not taken back before.
    unsafe fn from_raw<T>(p: *const T) -> Self::Owner<T>;
}

impl Ownership for OwnershipBox {
    type Owner<T> = Box<T>;

    fn into_raw<T>(value: T) -> *const T {
        Box::into_raw(Box::new(value)).cast_const()
    }

    unsafe fn from_raw<T>(p: *const T) -> Box<T> {
        // SAFETY: `p` came from `Box::into_raw` and is not owned elsewhere
        // (the caller's guarantee).
        unsafe { Box::from_raw(p.cast_mut()) }
    }
}

impl Ownership for OwnershipArc {
    type Owner<T> = Arc<T>;

    fn into_raw<T>(value: T) -> *const T {
        Arc::into_raw(Arc::new(value))
    }

    unsafe fn from_raw<T>(p: *const T) -> Arc<T> {
        // SAFETY: `p` came from `Arc::into_raw` and still holds the strong
        // reference it was given (the caller's guarantee).
        unsafe { Arc::from_raw(p) }
    }
}

/// What owns the value behind a `*mut C` once it is taken back.
pub(crate) type Owner<C> =
    <<C as Castable>::Ownership as Ownership>::Owner<<C as Castable>::RustType>;

/// Hands `value` to C: the pointer owns it until [`take`] or [`free`].
pub(crate) fn into_raw<C: Castable>(value: C::RustType) -> *mut C {
    C::Ownership::into_raw(value).cast_mut().cast()
}

/// The value behind a required pointer, borrowed for the call.
///
/// # Safety
/// `p` is NULL or a live pointer from [`into_raw`] that stays live for `'a`.
pub(crate) unsafe fn to_ref<'a, C: Castable>(
    p: *const C,
    name: &str,
) -> FfiResult<&'a C::RustType> {
    // SAFETY: a live pointer from `into_raw` points to a `RustType` (the
    // caller's guarantee).
    unsafe { ref_arg(p.cast::<C::RustType>(), name) }
}

/// The value behind an optional pointer (NULL: `None`), borrowed.
///
/// # Safety
/// As [`to_ref`].
pub(crate) unsafe fn opt_ref<'a, C: Castable>(p: *const C) -> Option<&'a C::RustType> {
    // SAFETY: as in `to_ref`.
    unsafe { p.cast::<C::RustType>().as_ref() }
}

/// A new reference to the value behind a required `Arc` handle: it keeps
/// the value alive for the whole call, even if the handle is freed by
/// another thread meanwhile.
///
/// # Safety
/// `p` is NULL or a live handle from [`into_raw`].
pub(crate) unsafe fn to_arc<C>(p: *const C, name: &str) -> FfiResult<Arc<C::RustType>>
where
    C: Castable<Ownership = OwnershipArc>,
{
    // Checked as a raw pointer, not through a reference: `Arc` reaches the
    // counts stored before the value.
    let value = p.cast::<C::RustType>();
    if value.is_null() {
        return Err(FfiError::arg(format!("{name} is NULL")));
    }
    // SAFETY: a live handle is a pointer from `Arc::into_raw` whose strong
    // count the handle itself holds, so the count is at least 1 here; the
    // new count is the reference returned.
    unsafe {
        Arc::increment_strong_count(value);
        Ok(Arc::from_raw(value))
    }
}

/// Takes back the value behind a pointer given to C (`None` for NULL): for
/// an `Arc` handle, the handle's own reference.
///
/// # Safety
/// `p` is NULL or a live pointer from [`into_raw`], not used again after
/// this call.
pub(crate) unsafe fn take<C: Castable>(p: *mut C) -> Option<Owner<C>> {
    let p = p.cast_const().cast::<C::RustType>();
    // SAFETY: `p` came from `into_raw` with this ownership and still owns
    // what it was given (the caller's guarantee).
    (!p.is_null()).then(|| unsafe { C::Ownership::from_raw(p) })
}

/// Drops what a pointer given to C owns; NULL is a no-op.
///
/// # Safety
/// As [`take`].
pub(crate) unsafe fn free<C: Castable>(p: *mut C) {
    // SAFETY: the caller's guarantee.
    drop(unsafe { take(p) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;

    /// A value whose clones of `.0` show whether it is still alive.
    #[derive(Debug)]
    struct Counted(Arc<()>);

    struct boxed_handle {
        _private: [u8; 0],
    }
    impl Castable for boxed_handle {
        type Ownership = OwnershipBox;
        type RustType = Counted;
    }

    struct arc_handle {
        _private: [u8; 0],
    }
    impl Castable for arc_handle {
        type Ownership = OwnershipArc;
        type RustType = Counted;
    }

    #[test]
    fn a_box_is_owned_once_and_freed_once() {
        let alive = Arc::new(());
        let p: *mut boxed_handle = into_raw(Counted(alive.clone()));
        // SAFETY: `p` is live until the `free` below.
        unsafe {
            assert!(Arc::ptr_eq(&to_ref(p, "p").unwrap().0, &alive));
            assert!(opt_ref(p).is_some());
            free(p);
        }
        assert_eq!(Arc::strong_count(&alive), 1);
    }

    #[test]
    fn an_arc_reference_outlives_the_handle() {
        let alive = Arc::new(());
        let p: *mut arc_handle = into_raw(Counted(alive.clone()));
        // SAFETY: `p` is live until the `free` below, and not used after.
        let held = unsafe {
            let held = to_arc(p, "p").unwrap();
            free(p);
            held
        };
        assert_eq!(
            Arc::strong_count(&alive),
            2,
            "the call's reference keeps it"
        );
        drop(held);
        assert_eq!(Arc::strong_count(&alive), 1);
    }

    #[test]
    fn null_is_an_argument_error_or_nothing() {
        // SAFETY: NULL is accepted by every function.
        unsafe {
            let e = to_arc(ptr::null::<arc_handle>(), "shell").unwrap_err();
            assert_eq!(e.message, "shell is NULL");
            assert!(to_ref(ptr::null::<boxed_handle>(), "store").is_err());
            assert!(opt_ref(ptr::null::<boxed_handle>()).is_none());
            assert!(take(ptr::null_mut::<arc_handle>()).is_none());
            free(ptr::null_mut::<boxed_handle>());
        }
    }
}
