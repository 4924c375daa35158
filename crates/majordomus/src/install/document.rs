//! A client's configuration file, edited in place: what majordomus adds goes in, what it
//! added comes out, and everything else — other servers, other hooks, comments, key order,
//! indentation — stays as it was written.
//!
//! JSON (and JSON with comments, as Cursor and VS Code-style clients allow) is edited through
//! `jsonc-parser`'s concrete syntax tree, TOML through `toml_edit`; both keep every byte they
//! are not asked to change.
//!
//! A majordomus entry someone wrote their own way — the server entry with other arguments or
//! an environment, one of our hooks with another matcher or timeout — is theirs: it is kept,
//! and said so, unless the person asks for it to be replaced (`--force`). An entry that differs
//! only in where the majordomus executable is (it moved) is still ours and is rewritten.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::Value;
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

use majordomus_core::clients::wiring::{Ours, Part, names_majordomus};

/// Why a file cannot be edited. Each says which file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("it is not valid JSON ({0}); fix it or move it aside, then run this again")]
    Json(String),
    #[error("it is not valid TOML ({0}); fix it or move it aside, then run this again")]
    Toml(String),
    #[error("`{0}` in it is not {1}, so majordomus leaves the file alone")]
    Shape(String, &'static str),
    #[error(
        "its client reads only strict JSON and ignores this file, which is not ({0}): remove \
         its comments and trailing commas, then run this again"
    )]
    NotStrict(String),
}

/// What putting a part in, or taking it out, came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done, or nothing needed doing.
    Done,
    /// A majordomus entry written some other way than install writes it is there, and stays.
    KeptOwn,
}

/// Whether `existing`, found under majordomus's server name, is the entry `wanted` but for
/// where the executable is.
fn server_as_written(existing: &Value, wanted: &Value) -> bool {
    if existing == wanted {
        return true;
    }
    let mut existing = existing.clone();
    match existing.get_mut("command") {
        Some(Value::String(command)) if names_majordomus(command) => {
            *command = wanted["command"].as_str().unwrap_or_default().to_owned();
        }
        _ => return false,
    }
    &existing == wanted
}

/// A configuration file's text, parsed for editing.
pub struct Document {
    syntax: Syntax,
    /// Whether the text ends with a line break, as a new file does: kept as it was.
    ends_with_newline: bool,
}

enum Syntax {
    Json(CstRootNode),
    Toml(DocumentMut),
}

impl Document {
    /// A JSON file's text; an absent or empty file is an empty object.
    pub fn json(text: Option<&str>) -> Result<Document, EditError> {
        let text = text
            .filter(|text| !text.trim().is_empty())
            .unwrap_or("{}\n");
        let root = CstRootNode::parse(text, &ParseOptions::default())
            .map_err(|error| EditError::Json(error.to_string()))?;
        if root
            .value()
            .is_some_and(|value| value.as_object().is_none())
        {
            return Err(EditError::Shape("the whole file".into(), "an object"));
        }
        Ok(Document {
            syntax: Syntax::Json(root),
            ends_with_newline: text.ends_with('\n'),
        })
    }

    /// A TOML file's text; an absent file is an empty document.
    pub fn toml(text: Option<&str>) -> Result<Document, EditError> {
        let document = text
            .unwrap_or("")
            .parse::<DocumentMut>()
            .map_err(|error| EditError::Toml(error.to_string()))?;
        Ok(Document {
            syntax: Syntax::Toml(document),
            ends_with_newline: text.is_none_or(|text| text.is_empty() || text.ends_with('\n')),
        })
    }

    /// The file's text now.
    pub fn text(&self) -> String {
        let mut text = match &self.syntax {
            Syntax::Json(root) => root.to_string(),
            Syntax::Toml(document) => document.to_string(),
        };
        if self.ends_with_newline && !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text
    }

    /// Puts `part` in, changing nothing that is already as it should be; a majordomus entry
    /// written some other way is kept unless `force`.
    pub fn apply(&mut self, part: &Part, force: bool) -> Result<Outcome, EditError> {
        match &mut self.syntax {
            Syntax::Json(root) => json_apply(root, part, force),
            Syntax::Toml(document) => toml_apply(document, part, force),
        }
    }

    /// Takes `part` out again, and the objects it leaves empty; a majordomus entry written
    /// some other way is kept unless `force`.
    pub fn remove(&mut self, part: &Part, force: bool) -> Result<Outcome, EditError> {
        match &mut self.syntax {
            Syntax::Json(root) => json_remove(root, part, force),
            Syntax::Toml(document) => toml_remove(document, part, force),
        }
    }

    /// Whether `part` is in, in some form: the server entry under its name (whatever command
    /// it runs), the list item, a hook of ours for the event.
    pub fn has(&self, part: &Part) -> bool {
        let parents = parents_of(part);
        let found: Option<Value> = match &self.syntax {
            Syntax::Json(root) => {
                json_existing(root, parents).and_then(|object| object.to_serde_value())
            }
            Syntax::Toml(document) => {
                let mut table = Some(document.as_table());
                for name in parents {
                    table = table.and_then(|t| t.get(name)).and_then(Item::as_table);
                }
                table.map(table_json)
            }
        };
        let Some(found) = found else {
            return false;
        };
        match part {
            Part::Entry { key, .. } => found.get(key).is_some(),
            Part::ListItem { key, item, .. } => found[key]
                .as_array()
                .is_some_and(|items| items.iter().any(|i| i.as_str() == Some(item))),
            Part::Default { .. } => true,
            Part::Hook { event, ours, .. } => found[event]
                .as_array()
                .is_some_and(|entries| entries.iter().any(|entry| ours.entry(entry))),
        }
    }
}

fn parents_of(part: &Part) -> &'static [&'static str] {
    match part {
        Part::Entry { parents, .. }
        | Part::ListItem { parents, .. }
        | Part::Default { parents, .. }
        | Part::Hook { parents, .. } => parents,
    }
}

/// The order keys are written in: what a thing is before its details, as people write these
/// configurations. Keys not listed follow, in name order.
const KEY_ORDER: [&str; 8] = [
    "name", "type", "matcher", "command", "args", "hooks", "timeout", "trust",
];

fn ordered(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by_key(|(key, _)| {
        KEY_ORDER
            .iter()
            .position(|known| known == key)
            .unwrap_or(KEY_ORDER.len())
    });
    entries
}

/// Our values (never a user's) as CST input: they are a few levels deep at most.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => CstInputValue::Object(
            ordered(map)
                .into_iter()
                .map(|(key, value)| (key.clone(), input(value)))
                .collect(),
        ),
    }
}

/// The object at `parents`, made where missing.
fn json_object(root: &CstRootNode, parents: &[&str]) -> Result<CstObject, EditError> {
    let mut object = root.object_value_or_set();
    for (depth, name) in parents.iter().enumerate() {
        object = object
            .object_value_or_create(name)
            .ok_or_else(|| EditError::Shape(parents[..=depth].join("."), "an object"))?;
    }
    Ok(object)
}

/// The object at `parents`, if it is there.
fn json_existing(root: &CstRootNode, parents: &[&str]) -> Option<CstObject> {
    let mut object = root.value()?.as_object()?;
    for name in parents {
        object = object.get(name)?.value()?.as_object()?;
    }
    Some(object)
}

fn json_apply(root: &CstRootNode, part: &Part, force: bool) -> Result<Outcome, EditError> {
    let object = json_object(root, parents_of(part))?;
    match part {
        Part::Entry { key, value, .. } => match object.get(key) {
            Some(prop) => {
                let existing = prop.value().and_then(|v| v.to_serde_value());
                if existing.as_ref() == Some(value) {
                    return Ok(Outcome::Done);
                }
                if !force && !existing.is_some_and(|existing| server_as_written(&existing, value)) {
                    return Ok(Outcome::KeptOwn);
                }
                prop.set_value(input(value));
            }
            None => {
                object.append(key, input(value));
            }
        },
        Part::ListItem { key, item, .. } => {
            let list = object
                .array_value_or_create(key)
                .ok_or_else(|| EditError::Shape((*key).into(), "a list"))?;
            let has = list.elements().iter().any(|element| {
                element.to_serde_value().as_ref().and_then(Value::as_str) == Some(item)
            });
            if !has {
                list.append(CstInputValue::String((*item).to_owned()));
            }
        }
        Part::Default { key, value, .. } => {
            if object.get(key).is_none() {
                object.append(key, input(value));
            }
        }
        Part::Hook {
            event, entry, ours, ..
        } => {
            let list = object
                .array_value_or_create(event)
                .ok_or_else(|| EditError::Shape((*event).into(), "a list"))?;
            let values: Vec<Value> = list
                .elements()
                .iter()
                .filter_map(CstNode::to_serde_value)
                .collect();
            if values.contains(entry) {
                return Ok(Outcome::Done);
            }
            if !force && ours.someone_s_own(values.iter(), entry) {
                return Ok(Outcome::KeptOwn);
            }
            json_drop_ours(list.elements(), ours, |_| true);
            list.append(input(entry));
        }
    }
    Ok(Outcome::Done)
}

/// Takes our hooks out of a list's entries (those `dropped` says): a whole entry when nothing
/// else is in it.
fn json_drop_ours(elements: Vec<CstNode>, ours: &Ours, dropped: impl Fn(&Value) -> bool) {
    for element in elements {
        let Some(value) = element.to_serde_value() else {
            continue;
        };
        if !ours.entry(&value) || !dropped(&value) {
            continue;
        }
        match ours.without_ours(&value) {
            Some(rest) => {
                if let Some(object) = element.as_object() {
                    object.replace_with(input(&rest));
                }
            }
            None => element.remove(),
        }
    }
}

fn json_remove(root: &CstRootNode, part: &Part, force: bool) -> Result<Outcome, EditError> {
    let parents = parents_of(part);
    let Some(object) = json_existing(root, parents) else {
        return Ok(Outcome::Done);
    };
    let mut outcome = Outcome::Done;
    match part {
        Part::Entry { key, value, .. } => {
            if let Some(prop) = object.get(key) {
                let existing = prop.value().and_then(|v| v.to_serde_value());
                if force || existing.is_some_and(|existing| server_as_written(&existing, value)) {
                    prop.remove();
                } else {
                    outcome = Outcome::KeptOwn;
                }
            }
        }
        Part::ListItem { key, item, .. } => {
            if let Some(list) = object
                .get(key)
                .and_then(|p| p.value())
                .and_then(|v| v.as_array())
            {
                for element in list.elements() {
                    if element.to_serde_value().as_ref().and_then(Value::as_str) == Some(item) {
                        element.remove();
                    }
                }
                if list.elements().is_empty()
                    && let Some(prop) = object.get(key)
                {
                    prop.remove();
                }
            }
        }
        Part::Default { .. } => return Ok(Outcome::Done),
        Part::Hook {
            event, entry, ours, ..
        } => {
            if let Some(list) = object
                .get(event)
                .and_then(|p| p.value())
                .and_then(|v| v.as_array())
            {
                let values: Vec<Value> = list
                    .elements()
                    .iter()
                    .filter_map(CstNode::to_serde_value)
                    .collect();
                if !force && ours.someone_s_own(values.iter(), entry) {
                    outcome = Outcome::KeptOwn;
                }
                json_drop_ours(list.elements(), ours, |value| {
                    force || ours.as_written(value, entry)
                });
                if list.elements().is_empty()
                    && let Some(prop) = object.get(event)
                {
                    prop.remove();
                }
            }
        }
    }
    // The objects on the way, innermost first, go when the removal left them empty.
    for depth in (1..=parents.len()).rev() {
        let Some(parent) = json_existing(root, &parents[..depth - 1]) else {
            break;
        };
        let name = parents[depth - 1];
        let empty = parent
            .get(name)
            .and_then(|prop| prop.value())
            .and_then(|value| value.as_object())
            .is_some_and(|object| object.properties().is_empty());
        if !empty {
            break;
        }
        if let Some(prop) = parent.get(name) {
            prop.remove();
        }
    }
    Ok(outcome)
}

/// A JSON value as TOML: a table for an object, an array of tables for a list of objects.
fn toml_item(value: &Value) -> Item {
    match value {
        Value::Object(map) => {
            let mut table = Table::new();
            for (key, value) in ordered(map) {
                table.insert(key, toml_item(value));
            }
            Item::Table(table)
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
            let mut tables = ArrayOfTables::new();
            for item in items {
                if let Item::Table(table) = toml_item(item) {
                    tables.push(table);
                }
            }
            Item::ArrayOfTables(tables)
        }
        Value::Array(items) => {
            let array: toml_edit::Array = items
                .iter()
                .filter_map(|item| toml_item(item).into_value().ok())
                .collect();
            Item::Value(array.into())
        }
        Value::String(s) => toml_edit::value(s.as_str()),
        Value::Bool(b) => toml_edit::value(*b),
        Value::Number(n) => match n.as_i64() {
            Some(n) => toml_edit::value(n),
            None => toml_edit::value(n.as_f64().unwrap_or_default()),
        },
        Value::Null => Item::None,
    }
}

/// A TOML item as JSON, to compare it with what majordomus would write.
fn toml_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(value) => toml_value_json(value),
        Item::Table(table) => table_json(table),
        Item::ArrayOfTables(tables) => Value::Array(tables.iter().map(table_json).collect()),
    }
}

fn table_json(table: &Table) -> Value {
    Value::Object(
        table
            .iter()
            .map(|(key, item)| (key.to_owned(), toml_json(item)))
            .collect(),
    )
}

fn toml_value_json(value: &toml_edit::Value) -> Value {
    match value {
        toml_edit::Value::String(s) => Value::String(s.value().clone()),
        toml_edit::Value::Integer(n) => Value::from(*n.value()),
        toml_edit::Value::Float(f) => Value::from(*f.value()),
        toml_edit::Value::Boolean(b) => Value::Bool(*b.value()),
        toml_edit::Value::Datetime(d) => Value::String(d.value().to_string()),
        toml_edit::Value::Array(items) => Value::Array(items.iter().map(toml_value_json).collect()),
        toml_edit::Value::InlineTable(table) => Value::Object(
            table
                .iter()
                .map(|(key, value)| (key.to_owned(), toml_value_json(value)))
                .collect(),
        ),
    }
}

/// The table at `parents`, made (as a header-less table) where missing.
fn toml_table<'a>(
    document: &'a mut DocumentMut,
    parents: &[&str],
) -> Result<&'a mut Table, EditError> {
    let mut table = document.as_table_mut();
    for (depth, name) in parents.iter().enumerate() {
        table = table
            .entry(name)
            .or_insert_with(|| {
                let mut implicit = Table::new();
                implicit.set_implicit(true);
                Item::Table(implicit)
            })
            .as_table_mut()
            .ok_or_else(|| EditError::Shape(parents[..=depth].join("."), "a table"))?;
    }
    Ok(table)
}

fn toml_apply(document: &mut DocumentMut, part: &Part, force: bool) -> Result<Outcome, EditError> {
    let table = toml_table(document, parents_of(part))?;
    match part {
        Part::Entry { key, value, .. } => {
            let existing = table.get(key).map(toml_json);
            if existing.as_ref() == Some(value) {
                return Ok(Outcome::Done);
            }
            if existing.is_some()
                && !force
                && !existing.is_some_and(|existing| server_as_written(&existing, value))
            {
                return Ok(Outcome::KeptOwn);
            }
            table.insert(key, toml_item(value));
        }
        Part::Default { key, value, .. } => {
            if table.get(key).is_none() {
                table.insert(key, toml_item(value));
            }
        }
        Part::ListItem { key, item, .. } => {
            let list = table
                .entry(key)
                .or_insert_with(|| Item::Value(toml_edit::Array::new().into()))
                .as_array_mut()
                .ok_or_else(|| EditError::Shape((*key).into(), "an array"))?;
            if !list.iter().any(|element| element.as_str() == Some(item)) {
                list.push(*item);
            }
        }
        Part::Hook {
            event, entry, ours, ..
        } => {
            let Item::Table(wanted) = toml_item(entry) else {
                return Err(EditError::Shape((*event).into(), "a table"));
            };
            let list = table
                .entry(event)
                .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
                .as_array_of_tables_mut()
                .ok_or_else(|| EditError::Shape((*event).into(), "an array of tables"))?;
            let values: Vec<Value> = list.iter().map(table_json).collect();
            if values.contains(entry) {
                return Ok(Outcome::Done);
            }
            if !force && ours.someone_s_own(values.iter(), entry) {
                return Ok(Outcome::KeptOwn);
            }
            toml_drop_ours(list, ours, |_| true);
            list.push(wanted);
        }
    }
    Ok(Outcome::Done)
}

/// Takes our hooks out of an array of tables (those `dropped` says): a whole table when
/// nothing else is in it.
fn toml_drop_ours(list: &mut ArrayOfTables, ours: &Ours, dropped: impl Fn(&Value) -> bool) {
    let mut kept = ArrayOfTables::new();
    for table in list.iter() {
        let value = table_json(table);
        if !ours.entry(&value) || !dropped(&value) {
            kept.push(table.clone());
        } else if let Some(rest) = ours.without_ours(&value)
            && let Item::Table(rest) = toml_item(&rest)
        {
            kept.push(rest);
        }
    }
    *list = kept;
}

fn toml_remove(document: &mut DocumentMut, part: &Part, force: bool) -> Result<Outcome, EditError> {
    let parents = parents_of(part);
    let mut table = Some(document.as_table_mut());
    for name in parents {
        table = table
            .and_then(|t| t.get_mut(name))
            .and_then(Item::as_table_mut);
    }
    let Some(table) = table else {
        return Ok(Outcome::Done);
    };
    let mut outcome = Outcome::Done;
    match part {
        Part::Entry { key, value, .. } => {
            if let Some(existing) = table.get(key).map(toml_json) {
                if force || server_as_written(&existing, value) {
                    table.remove(key);
                } else {
                    outcome = Outcome::KeptOwn;
                }
            }
        }
        Part::Default { .. } => return Ok(Outcome::Done),
        Part::ListItem { key, item, .. } => {
            if let Some(list) = table.get_mut(key).and_then(Item::as_array_mut) {
                list.retain(|element| element.as_str() != Some(item));
                if list.is_empty() {
                    table.remove(key);
                }
            }
        }
        Part::Hook {
            event, entry, ours, ..
        } => {
            if let Some(list) = table.get_mut(event).and_then(Item::as_array_of_tables_mut) {
                let values: Vec<Value> = list.iter().map(table_json).collect();
                if !force && ours.someone_s_own(values.iter(), entry) {
                    outcome = Outcome::KeptOwn;
                }
                toml_drop_ours(list, ours, |value| force || ours.as_written(value, entry));
                if list.is_empty() {
                    table.remove(event);
                }
            }
        }
    }
    for depth in (1..=parents.len()).rev() {
        let mut parent = Some(document.as_table_mut());
        for name in &parents[..depth - 1] {
            parent = parent
                .and_then(|t| t.get_mut(name))
                .and_then(Item::as_table_mut);
        }
        let Some(parent) = parent else {
            break;
        };
        let name = parents[depth - 1];
        if parent
            .get(name)
            .and_then(Item::as_table)
            .is_some_and(Table::is_empty)
        {
            parent.remove(name);
        } else {
            break;
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_core::clients::wiring::{hook_command, unwrapped};
    use serde_json::json;

    /// A JSON text with comments, as a value.
    fn value_of(text: &str) -> Value {
        CstRootNode::parse(text, &ParseOptions::default())
            .unwrap()
            .to_serde_value()
            .unwrap()
    }

    fn server() -> Part {
        Part::Entry {
            parents: &["mcpServers"],
            key: "majordomus",
            value: json!({"command": "majordomus", "args": ["mcp"]}),
        }
    }

    fn hook(event: &'static str) -> Part {
        Part::Hook {
            parents: &["hooks"],
            event,
            entry: json!({"matcher": "Write|Edit", "hooks": [
                {"type": "command", "command": format!("majordomus hook claude-code {event}"), "timeout": 5}
            ]}),
            ours: Ours::new("claude-code", event),
        }
    }

    #[test]
    fn json_keeps_comments_order_and_other_entries_and_comes_back_out() {
        let original = "{\n    // the team's servers\n    \"mcpServers\": {\n        \"docs\": { \"command\": \"docs-mcp\" }\n    },\n    \"zeta\": 1,\n    \"hooks\": {\n        \"PreToolUse\": [\n            { \"matcher\": \"Bash\", \"hooks\": [{ \"type\": \"command\", \"command\": \"lint\" }] }\n        ]\n    }\n}\n";
        let mut document = Document::json(Some(original)).unwrap();
        document.apply(&server(), false).unwrap();
        document.apply(&hook("PreToolUse"), false).unwrap();
        let installed = document.text();
        assert!(installed.contains("// the team's servers"), "{installed}");
        assert!(installed.contains("\"docs\""));
        assert!(installed.contains("\"lint\""));
        let parsed = value_of(&installed);
        assert_eq!(parsed["mcpServers"]["majordomus"]["args"], json!(["mcp"]));
        assert_eq!(parsed["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert!(
            installed.find("\"zeta\"").unwrap() < installed.find("\"hooks\"").unwrap(),
            "keys keep their order"
        );

        let mut again = Document::json(Some(&installed)).unwrap();
        again.apply(&server(), false).unwrap();
        again.apply(&hook("PreToolUse"), false).unwrap();
        assert_eq!(again.text(), installed, "applying twice changes nothing");

        again.remove(&hook("PreToolUse"), false).unwrap();
        again.remove(&server(), false).unwrap();
        let parsed = value_of(&again.text());
        assert!(parsed["mcpServers"].get("majordomus").is_none());
        assert_eq!(parsed["hooks"]["PreToolUse"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn a_moved_executable_replaces_our_hook_and_never_another() {
        let mut document = Document::json(None).unwrap();
        document.apply(&hook("PreToolUse"), false).unwrap();
        let moved = Part::Hook {
            parents: &["hooks"],
            event: "PreToolUse",
            entry: json!({"matcher": "Write|Edit", "hooks": [
                {"type": "command", "command": "/opt/bin/majordomus hook claude-code PreToolUse", "timeout": 5}
            ]}),
            ours: Ours::new("claude-code", "PreToolUse"),
        };
        document.apply(&moved, false).unwrap();
        let text = document.text();
        assert_eq!(
            text.matches("hook claude-code PreToolUse").count(),
            1,
            "{text}"
        );
        assert!(text.contains("/opt/bin/majordomus"));
    }

    #[test]
    fn removal_leaves_no_empty_object_behind() {
        let mut document = Document::json(Some("{\"theme\": \"dark\"}\n")).unwrap();
        document.apply(&server(), false).unwrap();
        document.remove(&server(), false).unwrap();
        let parsed: Value = serde_json::from_str(&document.text()).unwrap();
        assert_eq!(parsed, json!({"theme": "dark"}));
    }

    #[test]
    fn toml_keeps_comments_and_takes_our_tables_out_again() {
        let original = "# Codex, configured by hand\nmodel = \"gpt-5-codex\" # the default\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n";
        let part = Part::Entry {
            parents: &["mcp_servers"],
            key: "majordomus",
            value: json!({"command": "majordomus", "args": ["mcp"]}),
        };
        let hook = Part::Hook {
            parents: &["hooks"],
            event: "PreToolUse",
            entry: json!({"matcher": "apply_patch", "hooks": [
                {"type": "command", "command": "majordomus hook codex PreToolUse", "timeout": 5}
            ]}),
            ours: Ours::new("codex", "PreToolUse"),
        };
        let mut document = Document::toml(Some(original)).unwrap();
        document.apply(&part, false).unwrap();
        document.apply(&hook, false).unwrap();
        let installed = document.text();
        assert!(installed.starts_with(original), "{installed}");
        assert!(
            installed.contains("[mcp_servers.majordomus]"),
            "{installed}"
        );
        assert!(
            installed.contains("[[hooks.PreToolUse.hooks]]"),
            "{installed}"
        );
        assert!(!installed.contains("[mcp_servers]\n"), "{installed}");

        let mut again = Document::toml(Some(&installed)).unwrap();
        again.apply(&part, false).unwrap();
        again.apply(&hook, false).unwrap();
        assert_eq!(again.text(), installed);
        again.remove(&hook, false).unwrap();
        again.remove(&part, false).unwrap();
        assert_eq!(again.text(), original);
    }

    #[test]
    fn an_entry_written_another_way_is_kept_unless_forced_and_a_moved_one_is_ours() {
        let part = Part::Entry {
            parents: &["mcp_servers"],
            key: "majordomus",
            value: json!({"command": "majordomus", "args": ["mcp"]}),
        };
        let own = "[mcp_servers.majordomus]\ncommand = \"majordomus\"\nargs = [\"mcp\"]\nenv = { RUST_LOG = \"debug\" }\n";
        let mut document = Document::toml(Some(own)).unwrap();
        assert_eq!(document.apply(&part, false).unwrap(), Outcome::KeptOwn);
        assert_eq!(document.remove(&part, false).unwrap(), Outcome::KeptOwn);
        assert_eq!(document.text(), own);
        assert_eq!(document.apply(&part, true).unwrap(), Outcome::Done);
        assert!(!document.text().contains("RUST_LOG"), "{}", document.text());

        let moved =
            "[mcp_servers.majordomus]\ncommand = \"/old/bin/majordomus\"\nargs = [\"mcp\"]\n";
        let mut document = Document::toml(Some(moved)).unwrap();
        assert_eq!(document.apply(&part, false).unwrap(), Outcome::Done);
        assert!(!document.text().contains("/old/bin"), "{}", document.text());

        for own in [
            r#"{"hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "majordomus hook claude-code PreToolUse", "timeout": 30}]}]}}"#,
            r#"{"hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "env RUST_LOG=debug majordomus hook claude-code PreToolUse", "timeout": 5}]}]}}"#,
        ] {
            let mut document = Document::json(Some(own)).unwrap();
            assert_eq!(
                document.apply(&hook("PreToolUse"), false).unwrap(),
                Outcome::KeptOwn
            );
            assert_eq!(document.text(), own);
            assert_eq!(
                document.remove(&hook("PreToolUse"), false).unwrap(),
                Outcome::KeptOwn
            );
            assert_eq!(document.text(), own);
            assert_eq!(
                document.apply(&hook("PreToolUse"), true).unwrap(),
                Outcome::Done
            );
            assert_eq!(
                value_of(&document.text())["hooks"]["PreToolUse"],
                json!([{"matcher": "Write|Edit", "hooks": [
                    {"type": "command", "command": "majordomus hook claude-code PreToolUse", "timeout": 5}
                ]}])
            );
        }
    }

    /// The bare command earlier versions wrote and the guarded one written now are both
    /// majordomus's: install replaces the first with the second, uninstall takes either out.
    #[test]
    fn the_bare_and_the_guarded_hook_commands_are_both_ours() {
        let guarded = |event: &'static str| Part::Hook {
            parents: &["hooks"],
            event,
            entry: json!({"matcher": "Write|Edit", "hooks": [
                {"type": "command", "command": hook_command("majordomus", "claude-code", event), "timeout": 5}
            ]}),
            ours: Ours::new("claude-code", event),
        };
        let bare = r#"{"hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "/old/bin/majordomus hook claude-code PreToolUse", "timeout": 5}]}]}}"#;
        let mut document = Document::json(Some(bare)).unwrap();
        assert_eq!(
            document.apply(&guarded("PreToolUse"), false).unwrap(),
            Outcome::Done
        );
        let installed = value_of(&document.text());
        assert_eq!(
            installed["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            hook_command("majordomus", "claude-code", "PreToolUse")
        );
        assert_eq!(
            installed["hooks"]["PreToolUse"].as_array().unwrap().len(),
            1
        );
        assert!(document.has(&guarded("PreToolUse")));
        for text in [bare.to_owned(), document.text()] {
            let mut document = Document::json(Some(&text)).unwrap();
            assert_eq!(
                document.remove(&guarded("PreToolUse"), false).unwrap(),
                Outcome::Done
            );
            assert!(
                !document.text().contains("majordomus"),
                "{}",
                document.text()
            );
        }
        let quoted = hook_command("'/opt/my tools/majordomus'", "codex", "PreToolUse");
        assert_eq!(
            unwrapped(&quoted),
            "'/opt/my tools/majordomus' hook codex PreToolUse"
        );
        assert_eq!(
            unwrapped(
                "sh -c 'command -v x >/dev/null 2>&1 || exit 0; exec y hook codex PreToolUse'"
            ),
            "sh -c 'command -v x >/dev/null 2>&1 || exit 0; exec y hook codex PreToolUse'",
            "a check of another program is not the wrapper"
        );
    }

    #[test]
    fn a_file_of_the_wrong_shape_is_left_alone_with_a_reason() {
        let error = Document::json(Some("[1, 2]")).err().unwrap().to_string();
        assert!(error.contains("an object"), "{error}");
        let mut document = Document::json(Some("{\"mcpServers\": 3}")).unwrap();
        let error = document.apply(&server(), false).unwrap_err().to_string();
        assert!(error.contains("`mcpServers`"), "{error}");
        assert!(Document::json(Some("{not json")).is_err());
        assert!(Document::toml(Some("[[[")).is_err());
    }
}
