//! JSON Schemas of capability inputs and outputs, generated from the Rust types.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The schema of what an input type accepts (JSON Schema 2020-12, as MCP requires).
pub fn input_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    serde_json::to_value(generator.into_root_schema_for::<T>()).expect("schemas serialise")
}

/// The schema of what an output type writes.
pub fn output_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    serde_json::to_value(generator.into_root_schema_for::<T>()).expect("schemas serialise")
}
