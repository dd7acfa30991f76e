//! Options as a face hands them over, before they are read as a core type:
//! [`Given`], a value in JSON's shapes that a face builds from its own
//! values, and [`read_options`], which reads named fields of them as an
//! option type through its serde derive and says which one was refused.
//!
//! A face whose values are not JSON uses this instead of `serde_json::Value`:
//! a JavaScript number may be `NaN`, an infinity or beyond 2^64, and must
//! reach the core's checks as given (`waitMs must be …, got NaN`), which a
//! JSON value cannot carry.

use serde::de::value::{Error, MapAccessDeserializer, SeqDeserializer};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Unexpected,
    Visitor,
};

use super::read::{Spelling, current_key, name, path_to, spelled, within};
use super::{DURATION_KEYS, VERBATIM_KEYS, snake_key};

/// A value of an option, as a face gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    /// `null` (or Python's `None`): the option's default.
    Null,
    Bool(bool),
    /// Any number; integral ones are read as integers.
    Number(f64),
    Text(String),
    List(Vec<Given>),
    /// An object's fields, in their order.
    Map(Vec<(String, Given)>),
    /// A value no option takes (a function, a symbol…), named by its kind
    /// for the error.
    Other(String),
}

/// Options a face sent that the core refused: the text of the error, and
/// whether a value had the wrong type (a face's usual error for that:
/// Python's and JavaScript's `TypeError`) rather than a value the core's
/// check refused (`<name> must be …, got …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub message: String,
    pub wrong_type: bool,
}

/// Reads `fields` (an options object's, by the face's names) as the option
/// type `T`, its names and durations taken as `spelling`'s. A camelCase
/// face's `timeoutMs` is the field `timeout`, read in milliseconds; a
/// duration without its unit (`timeout` there) is no option of that face
/// and is ignored, as other unknown names are unless `T` refuses them.
pub fn read_options<T: DeserializeOwned>(
    fields: Vec<(String, Given)>,
    spelling: Spelling,
) -> Result<T, Refused> {
    let fields: Vec<(String, Given)> = match spelling {
        Spelling::Wire => fields,
        Spelling::CamelCase => fields
            .into_iter()
            .filter_map(|(name, value)| wire_field(&name, value))
            .collect(),
    };
    spelled(spelling, || T::deserialize(Given::Map(fields))).map_err(Refused::from)
}

/// Reads the value of the one option `name` (a face's `sandbox` argument)
/// as `T`, its errors named as [`read_options`] names them.
pub fn read_value<T: DeserializeOwned>(
    name: &str,
    value: Given,
    spelling: Spelling,
) -> Result<T, Refused> {
    let (key, value) = match spelling {
        Spelling::Wire => (name.to_owned(), value),
        Spelling::CamelCase => wire_field(name, value).unwrap_or((name.to_owned(), Given::Null)),
    };
    spelled(spelling, || {
        within(&key, || T::deserialize(value)).map_err(|err| named(&key, err))
    })
    .map_err(Refused::from)
}

/// A type error of the value of field `key`, or a word none of its enum's
/// (`engine: unknown variant …`), named by the field's path (serde's text
/// names none); other errors name their option already.
fn named(key: &str, err: Error) -> Error {
    let text = err.to_string();
    if ["invalid type", "invalid length", "unknown variant"]
        .iter()
        .any(|s| text.starts_with(s))
    {
        de::Error::custom(format!("{}: {text}", within(key, || name(key))))
    } else {
        err
    }
}

impl From<Error> for Refused {
    fn from(error: Error) -> Refused {
        let message = error.to_string();
        // After the name of the field, when a type error has one.
        let text = match message.split_once(": ") {
            Some((field, text)) if !field.contains(' ') => text,
            _ => &message,
        };
        let wrong_type = [
            "invalid type",
            "invalid length",
            "missing field",
            "unknown variant",
        ]
        .iter()
        .any(|start| text.starts_with(start));
        // Otherwise a core check's text, which names its option already.
        Refused {
            message,
            wrong_type,
        }
    }
}

/// Marks a name a camelCase face gave in the wire's spelling (`max_bytes`).
const FOREIGN: char = '!';

/// A camelCase face's field as the wire's: `maxBytes` → `max_bytes`,
/// `timeoutMs` → `timeout` (its value still in milliseconds, which the
/// readers take under [`Spelling::CamelCase`]), the names inside an object
/// value too; `None` for a duration given without its unit.
fn wire_field(name: &str, value: Given) -> Option<(String, Given)> {
    if name.contains('_') && !VERBATIM_KEYS.contains(&name) {
        // A wire name is no name of this face: kept apart from the field it
        // spells, so a type that refuses unknown names refuses it.
        return Some((format!("{FOREIGN}{name}"), value));
    }
    let key = snake_key(name);
    if let Some(base) = key
        .strip_suffix("_ms")
        .filter(|b| DURATION_KEYS.contains(b))
    {
        return Some((base.to_owned(), value));
    }
    if DURATION_KEYS.contains(&key.as_str()) {
        return None;
    }
    if VERBATIM_KEYS.contains(&key.as_str()) {
        return Some((key, value));
    }
    let value = match value {
        Given::Map(fields) => Given::Map(
            fields
                .into_iter()
                .filter_map(|(name, value)| wire_field(&name, value))
                .collect(),
        ),
        other => other,
    };
    Some((key, value))
}

impl Given {
    /// The value as JSON, for options read in another process (a remote
    /// server): a whole number as an integer; `None` for what JSON cannot
    /// carry (NaN, an infinity, a function), which no option takes.
    pub fn to_json(&self) -> Option<serde_json::Value> {
        use serde_json::Value;
        Some(match self {
            Given::Null => Value::Null,
            Given::Bool(b) => Value::Bool(*b),
            Given::Number(n) if n.fract() == 0.0 && n.abs() < 2f64.powi(63) => {
                Value::from(*n as i64)
            }
            Given::Number(n) => Value::from(serde_json::Number::from_f64(*n)?),
            Given::Text(s) => Value::String(s.clone()),
            Given::List(items) => {
                Value::Array(items.iter().map(Given::to_json).collect::<Option<_>>()?)
            }
            Given::Map(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| Some((k.clone(), v.to_json()?)))
                    .collect::<Option<_>>()?,
            ),
            Given::Other(_) => return None,
        })
    }
}

impl From<serde_json::Value> for Given {
    fn from(value: serde_json::Value) -> Given {
        use serde_json::Value;
        match value {
            Value::Null => Given::Null,
            Value::Bool(b) => Given::Bool(b),
            Value::Number(n) => Given::Number(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => Given::Text(s),
            Value::Array(items) => Given::List(items.into_iter().map(Given::from).collect()),
            Value::Object(map) => {
                Given::Map(map.into_iter().map(|(k, v)| (k, Given::from(v))).collect())
            }
        }
    }
}

impl<'de> IntoDeserializer<'de, Error> for Given {
    type Deserializer = Given;

    fn into_deserializer(self) -> Given {
        self
    }
}

/// An object's fields as serde reads them, each value read one level
/// down the path the readers name a refused option by.
struct Fields {
    fields: std::vec::IntoIter<(String, Given)>,
    value: Option<(String, Given)>,
}

impl Fields {
    /// The fields of an object; a `null` one left out (an option given as
    /// `null` takes its default, as one left out), but in a map of the
    /// user's own names (`env`), where it is a value of the wrong type.
    fn new(mut fields: Vec<(String, Given)>) -> Fields {
        if !current_key().is_some_and(|key| VERBATIM_KEYS.contains(&key.as_str())) {
            fields.retain(|(_, value)| *value != Given::Null);
        }
        Fields {
            fields: fields.into_iter(),
            value: None,
        }
    }
}

impl<'de> MapAccess<'de> for Fields {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.fields.next() else {
            return Ok(None);
        };
        let read = seed
            .deserialize(IntoDeserializer::<Error>::into_deserializer(key.clone()))
            .map_err(|err| {
                if !err.to_string().starts_with("unknown field") {
                    return err;
                }
                // Named by its whole path, as the face spells it.
                let shown = match key.strip_prefix(FOREIGN) {
                    Some(raw) => path_to(raw),
                    None => within(&key, || name(&key)),
                };
                de::Error::custom(format!("{shown} is not an option"))
            })?;
        self.value = Some((key, value));
        Ok(Some(read))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (key, value) = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("a value asked for before its key"))?;
        within(&key, || seed.deserialize(value)).map_err(|err| named(&key, err))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len())
    }
}

/// The largest integer an `f64` holds exactly (2^53).
const EXACT: f64 = 9_007_199_254_740_992.0;

impl<'de> Deserializer<'de> for Given {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Given::Null => visitor.visit_unit(),
            Given::Bool(b) => visitor.visit_bool(b),
            Given::Number(n) if n.fract() == 0.0 && n.abs() <= EXACT => visitor.visit_i64(n as i64),
            Given::Number(n) => visitor.visit_f64(n),
            Given::Text(s) => visitor.visit_string(s),
            Given::List(items) => visitor.visit_seq(SeqDeserializer::new(items.into_iter())),
            Given::Map(fields) => visitor.visit_map(Fields::new(fields)),
            Given::Other(kind) => Err(de::Error::invalid_type(Unexpected::Other(&kind), &visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Given::Null => visitor.visit_none(),
            other => visitor.visit_some(other),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self {
            Given::Text(text) => {
                visitor.visit_enum(IntoDeserializer::<Error>::into_deserializer(text))
            }
            Given::Map(fields) => {
                visitor.visit_enum(MapAccessDeserializer::new(Fields::new(fields)))
            }
            other => other.deserialize_any(visitor),
        }
    }

    /// A field the type does not read is skipped whatever it holds.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{RunOptions, ShellOptions};

    fn fields(pairs: &[(&str, Given)]) -> Vec<(String, Given)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn camel_case_fields_are_read_in_milliseconds_under_their_names() {
        let run: RunOptions = read_options(
            fields(&[
                ("command", Given::Text("ls".into())),
                ("timeoutMs", Given::Number(1500.0)),
                ("head", Given::Number(3.0)),
                ("timeout", Given::Number(9.0)),
            ]),
            Spelling::CamelCase,
        )
        .unwrap();
        assert_eq!(run.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(run.head_lines, Some(3));
        let refused = |pairs: &[(&str, Given)]| {
            read_options::<ShellOptions>(fields(pairs), Spelling::CamelCase).unwrap_err()
        };
        assert_eq!(
            refused(&[("maxBytes", Given::Number(f64::NAN))]),
            Refused {
                message: "maxBytes must be a whole number >= 1, got NaN".into(),
                wrong_type: false
            }
        );
        assert_eq!(
            refused(&[("maxJobs", Given::Number(1e300))]).message,
            "maxJobs must be a whole number below 2^64, got 1e300"
        );
        assert_eq!(
            refused(&[
                ("cwd", Given::Text("/".into())),
                ("envPolicy", Given::Text("none".into()))
            ]),
            Refused {
                message: "envPolicy: invalid type: string \"none\", expected an object with `inherit` and `exclude`"
                    .into(),
                wrong_type: true
            }
        );
        assert_eq!(
            refused(&[
                ("onJobExit", Given::Other("function".into())),
                ("prefix", Given::Other("function".into()))
            ])
            .message,
            "prefix: invalid type: function, expected a string"
        );
        assert_eq!(
            refused(&[("engine", Given::Text("bash".into()))]),
            Refused {
                message:
                    "engine: unknown variant `bash`, expected one of `auto`, `builtin`, `eval`"
                        .into(),
                wrong_type: true
            }
        );
    }

    #[test]
    fn wire_fields_keep_their_names_and_seconds() {
        let run: RunOptions = read_options(
            fields(&[
                ("command", Given::Text("ls".into())),
                ("timeout", Given::Number(1.5)),
            ]),
            Spelling::Wire,
        )
        .unwrap();
        assert_eq!(run.timeout, Some(Duration::from_millis(1500)));
        let refused =
            read_options::<RunOptions>(fields(&[("command", Given::Bool(true))]), Spelling::Wire)
                .unwrap_err();
        assert_eq!(
            refused.message,
            "command: invalid type: boolean `true`, expected a string"
        );
    }

    #[test]
    fn values_become_json_as_a_remote_server_reads_them() {
        let given = Given::Map(vec![
            ("max_bytes".into(), Given::Number(4096.0)),
            ("timeout".into(), Given::Number(1.5)),
            (
                "env".into(),
                Given::Map(vec![("A".into(), Given::Text("1".into()))]),
            ),
            (
                "list".into(),
                Given::List(vec![Given::Null, Given::Bool(true)]),
            ),
        ]);
        assert_eq!(
            given.to_json(),
            Some(
                serde_json::json!({"max_bytes": 4096, "timeout": 1.5, "env": {"A": "1"},
                                    "list": [null, true]})
            )
        );
        assert_eq!(Given::Number(-3.0).to_json(), Some(serde_json::json!(-3)));
        for unsent in [
            Given::Number(f64::NAN),
            Given::Number(f64::INFINITY),
            Given::Other("function".into()),
        ] {
            assert_eq!(Given::List(vec![unsent]).to_json(), None);
        }
    }
}
