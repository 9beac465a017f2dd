//! A chat completion body of the plain shape (the fields most clients send, each a JSON
//! object where one is due, none `null`), read straight off the bytes: no `Value` tree, so
//! no map node and no string per key. `parse::chat` tries it first and reads any other body
//! as a `Value`, as before.
//!
//! It must give exactly what the `Value` reading gives, canonical hash included. The hash is
//! FNV-1a over the body as `serde_json` writes a `Value` (keys sorted, compact), so this
//! shape writes itself the same way: fields declared in sorted key order, absent ones not
//! written, and every body whose canonical text this shape could not reproduce refused:
//! - an unknown field (it would be left out of the text);
//! - a `null` (a `null` field and an absent one are written differently);
//! - a repeated key (the `Value` keeps the last one; derived structs refuse it);
//! - a struct given as an array (serde reads `[..]` into a struct; the text would differ);
//! - a number that is not a whole `u32`, a `content` that is not a string.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A chat completion body of the plain shape. Fields in sorted key order (see the module).
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlainChat<'a> {
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_completion_tokens: Option<u32>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_tokens: Option<u32>,
    #[serde(borrow)]
    pub messages: Vec<Object<PlainMessage<'a>>>,
    #[serde(
        borrow,
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub model: Option<Cow<'a, str>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub stream: Option<bool>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub stream_options: Option<Object<PlainStreamOptions>>,
    #[serde(
        borrow,
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub user: Option<Cow<'a, str>>,
}

/// One message: its text and role.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlainMessage<'a> {
    #[serde(
        borrow,
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub role: Cow<'a, str>,
}

/// `stream_options`.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlainStreamOptions {
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub include_usage: Option<bool>,
}

/// A field that is there: its value must be a `T` (so `null` is refused); an absent field is
/// `None` through `default`.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// A struct read only from a JSON object: serde's derived structs also read an array
/// (`["text", "user"]`), whose canonical text is not the object's.
pub(crate) struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Only<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for Only<T> {
            type Value = Object<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Object)
            }
        }

        d.deserialize_map(Only(PhantomData))
    }
}

impl<T: Serialize> Serialize for Object<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// `bytes` read as a plain chat body, or `None` when they are not one (the caller reads them
/// as a `Value`). The top level must be an object too.
pub(crate) fn read(bytes: &[u8]) -> Option<PlainChat<'_>> {
    serde_json::from_slice::<Object<PlainChat<'_>>>(bytes)
        .ok()
        .map(|o| o.0)
}
