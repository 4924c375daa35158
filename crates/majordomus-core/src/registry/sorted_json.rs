//! JSON with every object's keys in sorted order, written straight to bytes.
//!
//! Every surface writes an answer with its objects' keys sorted, as `serde_json` writes a
//! [`Value`]: the MCP structured content is a `Value`, so REST, the CLI and a tool's text
//! must agree with it byte for byte. Going through a `Value` to get there builds a tree of
//! maps and strings only to walk and drop it, which was a tenth of a repository-wide
//! listing's cost. This serializer writes the bytes directly: each object's values are
//! written as they come, then the object is laid out again in key order. The output is
//! exactly `serde_json::to_vec(&serde_json::to_value(value)?)`, which the tests check and
//! debug builds assert for every answer.

use std::fmt::Write as _;
use std::ops::Range;

use serde::ser::{self, Error as _, Serialize};
use serde_json::{Error, Value};

/// Bytes an answer's buffer starts with when nothing says how large it will be: most answers
/// fit, and a larger one grows it a few times.
const FIRST_CAPACITY: usize = 1024;

/// `value` as JSON bytes, every object's keys sorted as a [`Value`]'s are (a key given twice
/// keeps its last value, as in a `Value`); `size`, when not 0, is about how many bytes it
/// takes, to start the buffer with.
pub fn to_vec<T: Serialize + ?Sized>(value: &T, size: usize) -> Result<Vec<u8>, Error> {
    let mut writer = Writer {
        out: Vec::with_capacity(if size == 0 { FIRST_CAPACITY } else { size }),
        ..Writer::default()
    };
    value.serialize(Sorted { w: &mut writer })?;
    Ok(writer.out)
}

/// The output and what the objects being written keep. Objects are finished innermost
/// first, so their entries and keys are stacks shared by all of them, and one scratch buffer
/// serves every object's reordering: a whole answer allocates a handful of times, not once
/// an object.
#[derive(Default)]
struct Writer {
    out: Vec<u8>,
    /// The entries of every object still open, the innermost's last.
    entries: Vec<Entry>,
    /// The map keys of every object still open, as text.
    keys: String,
    /// Where an object's values are copied while it is laid out again.
    scratch: Vec<u8>,
}

/// One value of an object being written.
struct Entry {
    key: Key,
    /// Where the value lies in the output.
    value: Range<usize>,
}

/// An entry's key: a struct's field name, or a map key kept in [`Writer::keys`].
enum Key {
    Field(&'static str),
    Kept(Range<usize>),
}

impl Key {
    fn text<'k>(&'k self, keys: &'k str) -> &'k str {
        match self {
            Key::Field(name) => name,
            Key::Kept(range) => &keys[range.clone()],
        }
    }
}

/// Writes one JSON value.
struct Sorted<'a> {
    w: &'a mut Writer,
}

impl Sorted<'_> {
    /// A leaf written as `serde_json` writes its `Value`, so numbers agree to the digit.
    fn leaf(self, value: Value) -> Result<(), Error> {
        serde_json::to_writer(&mut self.w.out, &value)
    }

    fn string(self, text: &str) -> Result<(), Error> {
        serde_json::to_writer(&mut self.w.out, text)
    }

    /// Opens `{"variant":`, the object a variant with content is written in.
    fn open_variant(&mut self, variant: &str) -> Result<(), Error> {
        self.w.out.push(b'{');
        serde_json::to_writer(&mut self.w.out, variant)?;
        self.w.out.push(b':');
        Ok(())
    }
}

impl<'a> ser::Serializer for Sorted<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Array<'a>;
    type SerializeTuple = Array<'a>;
    type SerializeTupleStruct = Array<'a>;
    type SerializeTupleVariant = Array<'a>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Object<'a>;

    fn serialize_bool(self, value: bool) -> Result<(), Error> {
        self.w
            .out
            .extend_from_slice(if value { b"true" } else { b"false" });
        Ok(())
    }

    fn serialize_i8(self, value: i8) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_i16(self, value: i16) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_i32(self, value: i32) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_i64(self, value: i64) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_i128(self, value: i128) -> Result<(), Error> {
        let value = serde_json::to_value(value)?;
        self.leaf(value)
    }

    fn serialize_u8(self, value: u8) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_u16(self, value: u16) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_u32(self, value: u32) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_u64(self, value: u64) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_u128(self, value: u128) -> Result<(), Error> {
        let value = serde_json::to_value(value)?;
        self.leaf(value)
    }

    fn serialize_f32(self, value: f32) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_f64(self, value: f64) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_char(self, value: char) -> Result<(), Error> {
        self.string(value.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, value: &str) -> Result<(), Error> {
        self.string(value)
    }

    fn serialize_bytes(self, value: &[u8]) -> Result<(), Error> {
        self.leaf(value.into())
    }

    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Error> {
        self.w.out.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.string(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.open_variant(variant)?;
        value.serialize(Sorted { w: &mut *self.w })?;
        self.w.out.push(b'}');
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Array<'a>, Error> {
        Ok(Array::open(self.w, false))
    }

    fn serialize_tuple(self, len: usize) -> Result<Array<'a>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Array<'a>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Array<'a>, Error> {
        self.open_variant(variant)?;
        Ok(Array::open(self.w, true))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Object<'a>, Error> {
        Ok(Object::open(self.w, false))
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Object<'a>, Error> {
        Ok(Object::open(self.w, false))
    }

    fn serialize_struct_variant(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Object<'a>, Error> {
        self.open_variant(variant)?;
        Ok(Object::open(self.w, true))
    }
}

/// An array being written: its elements go straight to the output.
struct Array<'a> {
    w: &'a mut Writer,
    first: bool,
    /// Whether the array is a variant's content, closed by the variant's object too.
    in_variant: bool,
}

impl<'a> Array<'a> {
    fn open(w: &'a mut Writer, in_variant: bool) -> Array<'a> {
        w.out.push(b'[');
        Array {
            w,
            first: true,
            in_variant,
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        if !self.first {
            self.w.out.push(b',');
        }
        self.first = false;
        value.serialize(Sorted { w: &mut *self.w })
    }

    fn close(self) -> Result<(), Error> {
        self.w.out.push(b']');
        if self.in_variant {
            self.w.out.push(b'}');
        }
        Ok(())
    }
}

impl ser::SerializeSeq for Array<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTuple for Array<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Array<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleVariant for Array<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

/// An object being written. Its values are written to the output one after another, as they
/// come, and where each lies is noted with its key; at its end they are laid out again as
/// an object, in key order. A nested object is finished before its parent moves it, so each
/// object is sorted once.
struct Object<'a> {
    w: &'a mut Writer,
    /// Where the object's values begin in the output.
    start: usize,
    /// Where its entries begin in [`Writer::entries`].
    first_entry: usize,
    /// Where its map keys begin in [`Writer::keys`].
    first_key: usize,
    /// The key given by `serialize_key`, waiting for its value.
    key: Option<Key>,
    /// Whether the object is a variant's content, closed by the variant's object too.
    in_variant: bool,
}

impl<'a> Object<'a> {
    fn open(w: &'a mut Writer, in_variant: bool) -> Object<'a> {
        Object {
            start: w.out.len(),
            first_entry: w.entries.len(),
            first_key: w.keys.len(),
            w,
            key: None,
            in_variant,
        }
    }

    fn entry<T: Serialize + ?Sized>(&mut self, key: Key, value: &T) -> Result<(), Error> {
        let from = self.w.out.len();
        value.serialize(Sorted { w: &mut *self.w })?;
        let value = from..self.w.out.len();
        self.w.entries.push(Entry { key, value });
        Ok(())
    }

    fn close(self) -> Result<(), Error> {
        let Writer {
            out,
            entries,
            keys,
            scratch,
        } = &mut *self.w;
        let mine = &mut entries[self.first_entry..];
        // Stable, so of a key given twice the last comes last, and is the one kept.
        mine.sort_by(|a, b| a.key.text(keys).cmp(b.key.text(keys)));
        scratch.clear();
        scratch.extend_from_slice(&out[self.start..]);
        out.truncate(self.start);
        out.push(b'{');
        let mut first = true;
        for (at, entry) in mine.iter().enumerate() {
            let key = entry.key.text(keys);
            if mine
                .get(at + 1)
                .is_some_and(|next| next.key.text(keys) == key)
            {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            serde_json::to_writer(&mut *out, key)?;
            out.push(b':');
            out.extend_from_slice(
                &scratch[entry.value.start - self.start..entry.value.end - self.start],
            );
        }
        out.push(b'}');
        if self.in_variant {
            out.push(b'}');
        }
        entries.truncate(self.first_entry);
        keys.truncate(self.first_key);
        Ok(())
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let from = self.w.keys.len();
        key.serialize(KeyText {
            keys: &mut self.w.keys,
        })?;
        self.key = Some(Key::Kept(from..self.w.keys.len()));
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| Error::custom("a map's value was given before its key"))?;
        self.entry(key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStruct for Object<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.entry(Key::Field(key), value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Object<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.entry(Key::Field(key), value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

/// A map key as the text a `Value`'s object holds it by: strings and characters as they
/// are, integers and booleans written out, a unit variant by its name; anything else is
/// refused, as `serde_json` refuses it. The text is written to the keys of the open objects.
struct KeyText<'a> {
    keys: &'a mut String,
}

fn key_must_be_a_string() -> Error {
    Error::custom("key must be a string")
}

impl KeyText<'_> {
    fn write(self, key: impl std::fmt::Display) -> Result<(), Error> {
        write!(self.keys, "{key}").map_err(Error::custom)
    }
}

impl ser::Serializer for KeyText<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_bool(self, value: bool) -> Result<(), Error> {
        self.write(value)
    }

    fn serialize_i8(self, value: i8) -> Result<(), Error> {
        self.write(value)
    }

    fn serialize_i16(self, value: i16) -> Result<(), Error> {
        self.write(value)
    }

    fn serialize_i32(self, value: i32) -> Result<(), Error> {
        self.write(value)
    }

    fn serialize_i64(self, value: i64) -> Result<(), Error> {
        self.write(value)
    }

    fn serialize_u8(self, value: u8) -> Result<(), Error> {
        self.write(value)
    }

    fn serialize_u16(self, value: u16) -> Result<(), Error> {
        self.write(value)
    }

    fn serialize_u32(self, value: u32) -> Result<(), Error> {
        self.write(value)
    }

    fn serialize_u64(self, value: u64) -> Result<(), Error> {
        self.write(value)
    }

    fn serialize_f32(self, _value: f32) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_f64(self, _value: f64) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_char(self, value: char) -> Result<(), Error> {
        self.write(value)
    }

    fn serialize_str(self, value: &str) -> Result<(), Error> {
        self.keys.push_str(value);
        Ok(())
    }

    fn serialize_bytes(self, _value: &[u8]) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_none(self) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit(self) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.keys.push_str(variant);
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(key_must_be_a_string())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use serde::Serialize;
    use serde_json::json;

    use super::to_vec;

    /// What every surface wrote before: the value, then its encoding.
    fn through_value<T: Serialize>(value: &T) -> Vec<u8> {
        serde_json::to_vec(&serde_json::to_value(value).unwrap()).unwrap()
    }

    fn same_as_through_value<T: Serialize>(value: &T) {
        assert_eq!(
            String::from_utf8(to_vec(value, 0).unwrap()).unwrap(),
            String::from_utf8(through_value(value)).unwrap()
        );
    }

    #[derive(Serialize)]
    struct Inner {
        zeta: Option<u32>,
        alpha: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<bool>,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Plain,
        Wrapped(u8),
        Pair(i32, String),
        Shaped { y: f64, x: f32 },
    }

    #[derive(Serialize)]
    struct Flattened {
        middle: Vec<Inner>,
        #[serde(flatten)]
        inner: Inner,
        beta: Kind,
        kinds: Vec<Kind>,
    }

    #[derive(Serialize)]
    struct Outer {
        zulu: Vec<Flattened>,
        alpha: BTreeMap<String, Inner>,
        counts: HashMap<u16, bool>,
        nothing: (),
        empty: Vec<u8>,
        bytes: ByteString,
        text: String,
        pair: (char, i128, u128),
    }

    /// A byte string, as `serialize_bytes` gives it.
    struct ByteString(Vec<u8>);

    impl Serialize for ByteString {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_bytes(&self.0)
        }
    }

    fn inner(zeta: Option<u32>, alpha: &'static str) -> Inner {
        Inner {
            zeta,
            alpha,
            skipped: zeta.map(|zeta| zeta % 2 == 0),
        }
    }

    #[test]
    fn nested_structs_maps_enums_and_flattened_fields_come_out_as_through_a_value() {
        let flattened = |beta| Flattened {
            middle: vec![inner(Some(1), "a\"b\\c\u{1}"), inner(None, "ünï")],
            inner: inner(Some(7), "</script>"),
            beta,
            kinds: vec![
                Kind::Plain,
                Kind::Wrapped(9),
                Kind::Pair(-3, "x".into()),
                Kind::Shaped { y: 0.1, x: 0.1 },
            ],
        };
        let outer = Outer {
            zulu: vec![
                flattened(Kind::Plain),
                flattened(Kind::Shaped {
                    y: f64::NAN,
                    x: 1e30,
                }),
            ],
            alpha: [
                ("b\"", inner(None, "")),
                ("a", inner(Some(2), "z")),
                ("", inner(Some(3), "é")),
            ]
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect(),
            counts: (0..20).map(|n| (n * 7, n % 3 == 0)).collect(),
            nothing: (),
            empty: Vec::new(),
            bytes: ByteString(vec![0, 255, 7]),
            text: "line\nbreak\ttab".into(),
            pair: ('\u{2028}', i128::from(i64::MIN), u128::from(u64::MAX)),
        };
        same_as_through_value(&outer);
    }

    #[test]
    fn a_key_given_twice_keeps_its_last_value_as_a_value_does() {
        struct Twice;
        impl Serialize for Twice {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("b", &1)?;
                map.serialize_entry("a", &2)?;
                map.serialize_entry("b", &3)?;
                map.end()
            }
        }
        same_as_through_value(&Twice);
        assert_eq!(to_vec(&Twice, 0).unwrap(), br#"{"a":2,"b":3}"#);
    }

    #[test]
    fn a_value_comes_out_as_it_is_written() {
        let value = json!({"b": [1, {"d": null, "c": 2.5}], "a": "x", "": {}});
        same_as_through_value(&value);
    }

    #[test]
    fn a_key_that_is_not_text_is_refused_as_serde_json_refuses_it() {
        let keyed: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into_iter().collect();
        assert!(serde_json::to_value(&keyed).is_err());
        let error = to_vec(&keyed, 0).unwrap_err();
        assert!(
            error.to_string().contains("key must be a string"),
            "{error}"
        );
    }
}
