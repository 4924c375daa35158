//! JSON Schemas of capability inputs and outputs, generated from the Rust types.
//!
//! Real clients read these schemas at every start and complain about what they do not know:
//! schemars names integer widths as formats (`uint32`, `uint64`), which Claude Code, Gemini CLI
//! and the MCP Inspector each report as an "unknown format", and an `Option` input field gets
//! `type: [X, "null"]`, which some clients flag as unportable although leaving the field out
//! is all an optional input ever needs. So every schema keeps only the formats JSON Schema
//! 2020-12 defines (the widths stay as `minimum`/`maximum`), and an optional input is simply
//! not required.

use schemars::generate::SchemaSettings;
use schemars::transform::{RestrictFormats, Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::Value;

/// The schema of what an input type accepts (JSON Schema 2020-12, as MCP requires).
pub fn input_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with_transform(IntegerWidthsAsBounds)
        .with_transform(RestrictFormats::default())
        .with_transform(OptionalMeansAbsent)
        .into_generator();
    serde_json::to_value(generator.into_root_schema_for::<T>()).expect("schemas serialise")
}

/// The schema of what an output type writes. An output field that is written as `null`
/// keeps `null` in its type: a client checks structured content against this schema.
pub fn output_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(IntegerWidthsAsBounds)
        .with_transform(RestrictFormats::default())
        .into_generator();
    serde_json::to_value(generator.into_root_schema_for::<T>()).expect("schemas serialise")
}

/// Says an integer's width as the bounds it implies (`uint32` → `minimum: 0`,
/// `maximum: 4294967295`) rather than as a format only schemars knows.
#[derive(Clone, Copy)]
struct IntegerWidthsAsBounds;

impl Transform for IntegerWidthsAsBounds {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        // 64-bit widths say only their sign: a bound of 2^64 - 1 reads wrongly in clients
        // whose numbers are doubles, and no input comes near it.
        let (minimum, maximum): (Option<i64>, Option<i64>) =
            match object.get("format").and_then(Value::as_str) {
                Some("uint8") => (Some(0), Some(u8::MAX.into())),
                Some("uint16") => (Some(0), Some(u16::MAX.into())),
                Some("uint32") => (Some(0), Some(u32::MAX.into())),
                Some("uint64" | "uint") => (Some(0), None),
                Some("int8") => (Some(i8::MIN.into()), Some(i8::MAX.into())),
                Some("int16") => (Some(i16::MIN.into()), Some(i16::MAX.into())),
                Some("int32") => (Some(i32::MIN.into()), Some(i32::MAX.into())),
                Some("int64" | "int") => (None, None),
                _ => return,
            };
        object.remove("format");
        if let Some(minimum) = minimum {
            object.entry("minimum").or_insert(minimum.into());
        }
        if let Some(maximum) = maximum {
            object.entry("maximum").or_insert(maximum.into());
        }
    }
}

/// Takes `null` out of the type of every property an object does not require: a client
/// leaves an optional input out rather than sending `null`.
#[derive(Clone, Copy)]
struct OptionalMeansAbsent;

impl Transform for OptionalMeansAbsent {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        let required: Vec<String> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let Some(properties) = object.get_mut("properties").and_then(Value::as_object_mut) else {
            return;
        };
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                drop_null_type(property);
            }
        }
    }
}

/// `type: [X, "null"]` becomes `type: X`; a `null` branch of an `anyOf` goes, and a lone
/// remaining branch takes the `anyOf`'s place.
fn drop_null_type(property: &mut Value) {
    let Some(object) = property.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            object.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(branches)) = object.get_mut("anyOf") {
        branches.retain(|branch| branch.get("type").is_none_or(|t| t != "null"));
        if branches.len() == 1
            && let Some(Value::Object(only)) = branches.pop()
        {
            object.remove("anyOf");
            for (key, value) in only {
                object.entry(key).or_insert(value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema, serde::Deserialize, serde::Serialize)]
    #[allow(dead_code)]
    struct Sample {
        count: u64,
        small: u32,
        maybe: Option<String>,
        nested: Option<Inner>,
    }

    #[derive(JsonSchema, serde::Deserialize, serde::Serialize)]
    #[allow(dead_code)]
    struct Inner {
        at: Option<u16>,
    }

    fn formats(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(format)) = map.get("format") {
                    out.push(format.clone());
                }
                map.values().for_each(|v| formats(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| formats(v, out)),
            _ => {}
        }
    }

    #[test]
    fn integer_widths_are_bounds_not_formats() {
        for schema in [input_schema::<Sample>(), output_schema::<Sample>()] {
            let mut found = Vec::new();
            formats(&schema, &mut found);
            assert!(found.is_empty(), "{found:?} in {schema:#}");
            assert_eq!(schema["properties"]["small"]["minimum"], 0);
            assert_eq!(schema["properties"]["small"]["maximum"], u32::MAX);
        }
    }

    #[test]
    fn optional_inputs_are_left_out_not_null() {
        let input = input_schema::<Sample>();
        assert_eq!(input["properties"]["maybe"]["type"], "string");
        assert_eq!(
            input["$defs"]["Inner"]["properties"]["at"]["type"],
            "integer"
        );
        let nested = &input["properties"]["nested"];
        assert!(nested.get("anyOf").is_none(), "{nested}");
        assert_eq!(nested["$ref"], "#/$defs/Inner");
        assert!(!input.to_string().contains("\"null\""), "{input:#}");
        // what an answer writes as null stays null in the output's schema
        let output = output_schema::<Sample>();
        assert_eq!(
            output["properties"]["maybe"]["type"],
            serde_json::json!(["string", "null"])
        );
    }
}
