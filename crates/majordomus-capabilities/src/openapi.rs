//! The OpenAPI 3.1 document, derived from the registry: one operation per HTTP exposure, its
//! operationId the capability id, its schemas the same ones MCP shows.

use serde_json::{Map, Value, json};

use majordomus_core::api::{BODY_LIMIT_BYTES, error_kinds};
use majordomus_core::registry::HttpMethod;

/// The whole document, as `/openapi.json` serves it and `majordomus openapi` prints it.
pub fn document() -> Value {
    let mut components = Map::new();
    let mut paths = Map::new();
    for capability in crate::registry().iter() {
        let Some((method, path)) = capability.declaration.exposure.http else {
            continue;
        };
        let declaration = &capability.declaration;
        let input = lift(capability.input_schema(), &mut components);
        let output = lift(capability.output_schema(), &mut components);
        let mut operation = json!({
            "operationId": declaration.id,
            "summary": declaration.title,
            "description": declaration.description,
            "tags": declaration.tags,
            "responses": {
                "200": {"description": "The answer.", "content": {"application/json": {"schema": output}}},
                "400": error_response("The input is not valid; the message says what to change."),
                "401": error_response("The lease token is missing or wrong."),
                "403": error_response("The Host or Origin is not loopback."),
                "404": error_response("What the input names does not exist here."),
                "422": error_response("Well-formed, but not possible over this surface or from here."),
                "500": error_response("Something failed on the server's side."),
            },
        });
        match method {
            HttpMethod::Get => {
                let required: Vec<&str> = input["required"]
                    .as_array()
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let parameters: Vec<Value> = input["properties"]
                    .as_object()
                    .map(|properties| {
                        properties
                            .iter()
                            .map(|(name, schema)| {
                                json!({
                                    "name": name,
                                    "in": "query",
                                    "required": required.contains(&name.as_str()),
                                    "description": schema.get("description").cloned().unwrap_or(Value::Null),
                                    "schema": schema,
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                operation["parameters"] = Value::Array(parameters);
            }
            HttpMethod::Post => {
                operation["requestBody"] = json!({
                    "required": true,
                    "content": {"application/json": {"schema": input}},
                });
                operation["responses"]["413"] = error_response(&format!(
                    "The body is over the limit of {} bytes.",
                    BODY_LIMIT_BYTES
                ));
            }
        }
        let method = method.as_str().to_ascii_lowercase();
        paths
            .entry(path.to_string())
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .expect("path items are objects")
            .insert(method, operation);
    }
    paths.insert(
        "/".into(),
        json!({"get": {
            "operationId": "server.identity",
            "summary": "Identity probe",
            "description": "Whose server this is; needs no token. A reader uses it to tell a live server of this checkout from a stale lease.",
            "security": [],
            "responses": {"200": {"description": "The identity.", "content": {"application/json": {"schema": majordomus_core::registry::output_schema::<majordomus_core::survey::Identity>()}}}},
        }}),
    );
    components.insert("Error".into(), json!({
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "object", "required": ["kind", "message"], "properties": {
            "kind": {"type": "string", "enum": error_kinds().collect::<Vec<_>>()},
            "message": {"type": "string", "description": "What was wrong and what to do."}
        }}}
    }));
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "majordomus",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The board of the AI coding agents working on one repository. MCP is served at /mcp (Streamable HTTP); these routes are the same capabilities as plain JSON.",
        },
        "servers": [{"url": "http://127.0.0.1:{port}", "variables": {"port": {"default": "0", "description": "The port the checkout's lease names."}}}],
        "security": [{"bearer": []}, {"token": []}],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "The token from the checkout's lease file."},
                "token": {"type": "apiKey", "in": "query", "name": "token", "description": "The same token, for clients that cannot set headers."},
            },
        },
    })
}

fn error_response(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

/// Moves a root schema's `$defs` into the shared components and points its references there.
fn lift(mut schema: Value, components: &mut Map<String, Value>) -> Value {
    if let Some(Value::Object(defs)) = schema.as_object_mut().and_then(|s| s.remove("$defs")) {
        for (name, mut def) in defs {
            repoint(&mut def);
            // Components are named by the Rust type's name: two types of one name would
            // silently describe one of them with the other's schema.
            if let Some(earlier) = components.get(&name) {
                assert_eq!(
                    earlier, &def,
                    "two schemas are named `{name}`; rename one of the types"
                );
            }
            components.insert(name, def);
        }
    }
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    repoint(&mut schema);
    schema
}

fn repoint(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get_mut("$ref")
                && let Some(name) = reference.strip_prefix("#/$defs/")
            {
                *reference = format!("#/components/schemas/{name}");
            }
            object.values_mut().for_each(repoint);
        }
        Value::Array(items) => items.iter_mut().for_each(repoint),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_an_operation_named_by_its_capability() {
        let document = document();
        assert_eq!(document["openapi"], "3.1.0");
        for capability in crate::registry().iter() {
            if let Some((method, path)) = capability.declaration.exposure.http {
                let operation = &document["paths"][path][method.as_str().to_ascii_lowercase()];
                assert_eq!(operation["operationId"], capability.id());
            }
        }
        let text = document.to_string();
        assert!(
            !text.contains("#/$defs/"),
            "every reference points into components"
        );
    }
}
