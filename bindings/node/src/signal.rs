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
    ValidateNapiValue, sys,
};
use napi::{Result, ValueType};

/// An `AbortSignal` passed in an options object (any object with `aborted`
/// and `addEventListener`/`removeEventListener`, as in the DOM and Node).
pub struct Signal(ObjectRef<false>);

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
        let object = unsafe { Object::from_napi_value(env, value) }?;
        Ok(Signal(object.create_ref()?))
    }
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
    pub fn attach(self, env: &Env, token: &CancelToken) -> Result<Attached> {
        let mut attached = Attached {
            signal: self.0,
            listener: None,
        };
        match attached.hook(env, token) {
            Ok(()) => Ok(attached),
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
        let listener: Function<(), ()> = env.create_function_from_closure("abort", move |_| {
            token.cancel();
            Ok(())
        })?;
        let add: ListenerMethod = signal.get_named_property("addEventListener").map_err(|_| {
            napi::Error::new(napi::Status::InvalidArg, "signal must be an AbortSignal")
        })?;
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
