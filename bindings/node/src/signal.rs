//! `AbortSignal` → [`CancelToken`].
//!
//! napi's own `AbortSignal` type replaces the signal's `onabort` property and
//! never looks at `signal.aborted`, so conch listens the way JS code does: an
//! already-aborted signal cancels the token before anything starts (nothing
//! is spawned), otherwise an `abort` listener cancels it, and the listener is
//! removed when the call settles so a long-lived signal does not collect one
//! listener per call.

use conch_core::CancelToken;
use napi::bindgen_prelude::{
    Env, FnArgs, FromNapiValue, Function, FunctionRef, JsObjectValue, Object, ObjectRef, TypeName,
    Unknown, ValidateNapiValue, sys,
};
use napi::{Result, ValueType};

use crate::errors::guarded;

/// An `AbortSignal` passed in an options object (any object with `aborted`
/// and `addEventListener`/`removeEventListener`, as in the DOM and Node);
/// `null` stands for none.
pub struct Signal(Option<ObjectRef<false>>);

impl TypeName for Signal {
    fn type_name() -> &'static str {
        "AbortSignal"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ValidateNapiValue for Signal {}

impl FromNapiValue for Signal {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        // SAFETY: forwarded from napi, which hands us a live value of `env`.
        let value = unsafe { Unknown::from_napi_value(env, value) }?;
        match value.get_type()? {
            ValueType::Null => Ok(Signal(None)),
            ValueType::Object => {
                // SAFETY: checked to be an object just above.
                let object: Object = unsafe { value.cast() }?;
                Ok(Signal(Some(object.create_ref()?)))
            }
            _ => Err(not_a_signal()),
        }
    }
}

fn not_a_signal() -> napi::Error {
    napi::Error::new(napi::Status::InvalidArg, "signal must be an AbortSignal")
}

type Listener = FunctionRef<(), ()>;
/// `addEventListener` / `removeEventListener`.
type ListenerMethod<'env> = Function<'env, FnArgs<(&'static str, Function<'env, (), ()>)>, ()>;

/// A signal tied to a token for the duration of one call.
pub struct Attached {
    signal: ObjectRef<false>,
    listener: Option<Listener>,
}

impl Signal {
    /// Cancels `token` now if the signal is already aborted, or when it
    /// aborts. Call [`Attached::detach`] on the JS thread when the call settles.
    pub fn attach(self, env: &Env, token: &CancelToken) -> Result<Option<Attached>> {
        let Some(signal) = self.0 else {
            return Ok(None);
        };
        let mut attached = Attached {
            signal,
            listener: None,
        };
        match attached.hook(env, token) {
            Ok(()) => Ok(Some(attached)),
            Err(err) => {
                attached.detach(env);
                Err(err)
            }
        }
    }
}

impl Attached {
    fn hook(&mut self, env: &Env, token: &CancelToken) -> Result<()> {
        let signal = self.signal.get_value(env)?;
        let aborted: Option<bool> = signal.get_named_property("aborted")?;
        if aborted == Some(true) {
            token.cancel();
            return Ok(());
        }
        let token = token.clone();
        // Called by JS through napi's C frames: a panic is caught there.
        let listener: Function<(), ()> = env.create_function_from_closure("abort", move |_| {
            let _ = guarded(|| token.cancel());
            Ok(())
        })?;
        let add: ListenerMethod = signal
            .get_named_property("addEventListener")
            .map_err(|_| not_a_signal())?;
        self.listener = Some(listener.create_ref()?);
        add.apply(signal, ("abort", listener).into())?;
        Ok(())
    }

    /// Removes the listener and releases the references (JS thread only).
    pub fn detach(self, env: &Env) {
        if let Some(listener) = self.listener {
            if let (Ok(signal), Ok(listener_fn)) =
                (self.signal.get_value(env), listener.borrow_back(env))
            {
                let remove: Result<ListenerMethod> =
                    signal.get_named_property("removeEventListener");
                if let Ok(remove) = remove {
                    let _ = remove.apply(signal, ("abort", listener_fn).into());
                }
            }
            drop(listener);
        }
        let _ = self.signal.unref(env);
    }
}
