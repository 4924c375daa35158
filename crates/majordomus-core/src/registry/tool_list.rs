//! The schemas a tool carries in `tools/list`: what a client needs of them, once.
//!
//! Every MCP client downloads `tools/list` at every start, and a model reads each tool's
//! description and input schema on every turn; the full schemas (every field of every nested
//! type, documented) live in `/openapi.json` and the reference pages. So a tool's input schema
//! keeps what the model uses — the fields, their descriptions, bounds and patterns — without
//! Rust type names, the dialect URI (MCP's default is 2020-12) or an enum spelled as a
//! `oneOf` of documented constants (the field's own description names the values), and
//! without the plain-text pattern: about 440 bytes naming every refused control and format
//! character, five times over, which a model cannot use — each such field's description says
//! it takes plain text, and the server refuses a refused character by name. A tool's
//! output schema says the answer's top level exactly — every field, its JSON type, `null`
//! where it can be, the values of an enum, which fields are always there — and a nested
//! object or array by its type alone: clients check structured content against it and hand
//! none of it to the model, and the full output schema is more than five times the size.

use majordomus_domain::text::PLAIN_TEXT_PATTERN;
use serde_json::{Map, Value, json};

/// How many `$ref` hops are followed when reading a field's type: our schemas' references
/// point straight at a definition, so more would mean a cycle.
const REFERENCE_HOPS: usize = 8;

/// The input schema as `tools/list` carries it. The description of the input type and of
/// each definition goes too: the tool's description says what the input is for, and every
/// field that refers to a definition carries its own.
pub fn tool_input_schema(mut schema: Value) -> Value {
    compact_input(&mut schema);
    if let Some(object) = schema.as_object_mut() {
        object.remove("description");
        if let Some(Value::Object(definitions)) = object.get_mut("$defs") {
            for definition in definitions.values_mut().filter_map(Value::as_object_mut) {
                definition.remove("description");
            }
        }
    }
    schema
}

/// The output schema as `tools/list` carries it: the answer's top level.
pub fn tool_output_schema(schema: &Value) -> Value {
    let definitions = schema.get("$defs");
    let properties: Map<String, Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, field)| (name.clone(), json_type_of(field, definitions)))
                .collect()
        })
        .unwrap_or_default();
    let mut top = Map::new();
    top.insert("type".into(), "object".into());
    top.insert("properties".into(), Value::Object(properties));
    if let Some(required) = schema.get("required") {
        top.insert("required".into(), required.clone());
    }
    Value::Object(top)
}

/// Drops what only a reader of the Rust types or a schema tool needs, everywhere in the
/// schema, and turns an enum of documented constants into a plain `enum`. Walks schemas
/// only: a field named `title`, or a default value, is left as it is.
fn compact_input(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    object.remove("$schema");
    object.remove("title");
    if object.get("pattern").and_then(Value::as_str) == Some(PLAIN_TEXT_PATTERN) {
        object.remove("pattern");
    }
    if let Some(values) = object.get("oneOf").and_then(constants) {
        object.remove("oneOf");
        object.insert("type".into(), "string".into());
        object.insert("enum".into(), Value::Array(values));
    }
    for (keyword, value) in object.iter_mut() {
        match (keyword.as_str(), value) {
            ("properties" | "$defs" | "patternProperties", Value::Object(named)) => {
                named.values_mut().for_each(compact_input)
            }
            ("allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(branches)) => {
                branches.iter_mut().for_each(compact_input)
            }
            ("items" | "additionalProperties" | "not" | "contains", nested) => {
                compact_input(nested)
            }
            _ => {}
        }
    }
}

/// The values of a `oneOf` whose every branch is one string constant.
fn constants(branches: &Value) -> Option<Vec<Value>> {
    branches
        .as_array()?
        .iter()
        .map(|branch| match branch.get("const") {
            Some(value @ Value::String(_)) if branch.get("type").is_none_or(|t| t == "string") => {
                Some(value.clone())
            }
            _ => None,
        })
        .collect()
}

/// A field's JSON type, read through references and unions: `{"type": …}` with `null` where
/// the field can be null, and `enum` when every non-null value is a constant. A field whose
/// type cannot be read is left open (`{}`), which every value satisfies.
fn json_type_of(field: &Value, definitions: Option<&Value>) -> Value {
    let mut types: Vec<Value> = Vec::new();
    let mut values: Option<Vec<Value>> = Some(Vec::new());
    let mut pending = vec![(field, 0usize)];
    while let Some((schema, hops)) = pending.pop() {
        if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
            let resolved = target
                .strip_prefix("#/$defs/")
                .and_then(|name| definitions?.get(name));
            match resolved {
                Some(resolved) if hops < REFERENCE_HOPS => pending.push((resolved, hops + 1)),
                _ => return json!({}),
            }
            continue;
        }
        let branches = ["anyOf", "oneOf"]
            .iter()
            .find_map(|key| schema.get(*key).and_then(Value::as_array));
        if let Some(branches) = branches {
            pending.extend(branches.iter().rev().map(|branch| (branch, hops)));
            continue;
        }
        let own_types: Vec<Value> = match schema.get("type") {
            Some(Value::Array(several)) => several.clone(),
            Some(one @ Value::String(_)) => vec![one.clone()],
            _ => match schema.get("const") {
                Some(Value::String(_)) => vec!["string".into()],
                _ => return json!({}),
            },
        };
        let constant = schema
            .get("const")
            .map(|value| vec![value.clone()])
            .or_else(|| schema.get("enum").and_then(Value::as_array).cloned());
        match constant {
            Some(constant) => {
                if let Some(values) = values.as_mut() {
                    values.extend(constant);
                }
            }
            None if own_types.iter().all(|t| t == "null") => {}
            None => values = None,
        }
        for kind in own_types {
            if !types.contains(&kind) {
                types.push(kind);
            }
        }
    }
    let nullable = types.iter().any(|t| t == "null");
    let mut out = Map::new();
    out.insert(
        "type".into(),
        match types.as_slice() {
            [one] => one.clone(),
            _ => Value::Array(types),
        },
    );
    if let Some(mut values) = values.filter(|values| !values.is_empty()) {
        if nullable {
            values.push(Value::Null);
        }
        out.insert("enum".into(), Value::Array(values));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_keeps_its_top_level_exactly_and_nested_types_by_kind() {
        let full = json!({
            "$defs": {
                "State": {"oneOf": [{"const": "on", "type": "string", "description": "On."},
                                    {"const": "off", "type": "string"}]},
                "Inner": {"type": "object", "properties": {"deep": {"type": "string"}}}
            },
            "type": "object",
            "title": "Answer",
            "properties": {
                "count": {"type": "integer", "minimum": 0, "description": "How many."},
                "state": {"$ref": "#/$defs/State"},
                "maybe_state": {"anyOf": [{"$ref": "#/$defs/State"}, {"type": "null"}]},
                "inner": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
                "items": {"type": "array", "items": {"$ref": "#/$defs/Inner"}},
                "caller": {"type": ["string", "null"]},
                "anything": true
            },
            "required": ["count", "state"]
        });
        assert_eq!(
            tool_output_schema(&full),
            json!({
                "type": "object",
                "properties": {
                    "count": {"type": "integer"},
                    "state": {"type": "string", "enum": ["on", "off"]},
                    "maybe_state": {"type": ["string", "null"], "enum": ["on", "off", null]},
                    "inner": {"type": ["object", "null"]},
                    "items": {"type": "array"},
                    "caller": {"type": ["string", "null"]},
                    "anything": {}
                },
                "required": ["count", "state"]
            })
        );
    }

    #[test]
    fn an_input_loses_type_names_documented_constants_and_the_plain_text_pattern_not_its_fields() {
        let full = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Input",
            "description": "What the Rust type is for.",
            "type": "object",
            "$defs": {"Which": {"title": "Which", "description": "Which one.", "oneOf": [
                {"const": "this", "type": "string", "description": "This one."},
                {"const": "all", "type": "string"}]}},
            "properties": {
                "which": {"$ref": "#/$defs/Which", "description": "`this` or `all`."},
                "text": {"type": "string", "maxLength": 10, "pattern": "^a$", "title": "x"},
                "words": {"type": "string", "maxLength": 10, "pattern": PLAIN_TEXT_PATTERN}
            }
        });
        assert_eq!(
            tool_input_schema(full),
            json!({
                "type": "object",
                "$defs": {"Which": {"type": "string", "enum": ["this", "all"]}},
                "properties": {
                    "which": {"$ref": "#/$defs/Which", "description": "`this` or `all`."},
                    "text": {"type": "string", "maxLength": 10, "pattern": "^a$"},
                    "words": {"type": "string", "maxLength": 10}
                }
            })
        );
    }
}
